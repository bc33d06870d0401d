"""`plan --format markdown`: a plan as the body of a pull-request comment.

A pure function of the report: no clock, no absolute path, every list sorted,
so the same plan gives the same text (a CI job updates its comment only when
the plan changed, and golden files can check it).

Per knowledge base it shows what the run would do to the documents, what it
would embed (chunks and tokens, estimated: a plan embeds nothing) and, where
the pipeline file prices the embedding model (``price_per_million_tokens``),
what that costs; what changed in the pipeline, value by value; the
mass-deletion guard's verdict; and a rebuild beside the live collection.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ..pipeline import Change, KnowledgeBaseReport, RunReport
from ..rag._chunkers.approx_token import BYTES_PER_TOKEN

#: A list longer than this folds into `<details>`.
FOLD_OVER = 10

# The actions a plan lists, in order, with their heading; the rest are skipped files.
_LISTED = (
    ("add", "Add"),
    ("update", "Update"),
    ("repair", "Repair"),
    ("delete", "Delete"),
    ("foreign", "Written outside runs (`run --adopt` takes them over)"),
)
_SKIPPED = ("unsupported", "empty", "skipped", "failed", "unreadable", "keep")


def plan_markdown(report: RunReport, *, title: str | None = None) -> str:
    """The plan in ``report`` (a dry run's) as GitHub-flavoured Markdown, ending in a newline.

    ``title`` heads it (e.g. the pipeline file's path as given, relative); by
    default "Plan". Prices come from the report, which carries each knowledge
    base's embedding model and its ``price_per_million_tokens``.
    """
    lines = [f"## {_text(title or 'Plan')}", ""]
    if not report.knowledge_bases:
        lines += ["No knowledge base was planned.", ""]
    for kb in sorted(report.knowledge_bases, key=lambda kb: kb.name):
        lines += _knowledge_base(kb)
    return "\n".join(lines).rstrip("\n") + "\n"


def _knowledge_base(kb: KnowledgeBaseReport) -> list[str]:
    lines = [f"### Knowledge base {_code(kb.name)}", ""]
    skipped = [c for c in kb.changes if c.action in _SKIPPED]
    lines += [
        "| add | update | delete | repair | unchanged | skipped |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
        "| "
        + " | ".join(
            f"{n:,}"
            for n in (
                kb.count("add"),
                kb.count("update"),
                kb.count("delete"),
                kb.count("repair"),
                kb.count("unchanged"),
                len(skipped),
            )
        )
        + " |",
        "",
    ]
    facts = [_embedding(kb), *_pipeline_changes(kb), _rebuild(kb), _guard(kb)]
    if kb.aborted:
        facts.append(f"- **Stopped** at the first failure (`on_error: fail`): {_text(kb.aborted)}")
    facts += [f"- **No file:** {_code(unmatched)}" for unmatched in kb.unmatched_sources]
    if kb.no_files:
        facts.append(f"- **Fails:** {_text(kb.no_files)}")
    lines += [fact for fact in facts if fact]
    lines.append("")
    for action, heading in _LISTED:
        changes = [c for c in kb.changes if c.action == action]
        if changes:
            lines += _listing(heading, changes)
    if skipped:
        lines += _listing("Skipped", skipped, label=True)
    return lines


def _embedding(kb: KnowledgeBaseReport) -> str:
    writes = sum(kb.count(a) for a in ("add", "update", "repair"))
    if not writes:
        return "- **To embed:** nothing"
    tokens = math.ceil(kb.bytes_to_embed / BYTES_PER_TOKEN)
    # A plan parses and chunks every file the run would write: its chunks are the run's.
    text = (
        f"- **To embed:** {_count(writes, 'document')}, {_count(kb.chunks_to_embed, 'chunk')}, "
        f"≈ {tokens:,} tokens (file bytes ÷ {BYTES_PER_TOKEN})"
    )
    model = f" with {_code(kb.embedding_model)}" if kb.embedding_model else ""
    price = kb.price_per_million_tokens
    if price is None:
        return f"{text}{model}; no price given (`price_per_million_tokens`)"
    cost = tokens * price / 1_000_000
    return f"{text}{model}; **cost ≈ {_amount(cost)}** at {price:g} per million tokens"


def _pipeline_changes(kb: KnowledgeBaseReport) -> list[str]:
    if not kb.fingerprint_changes:
        return []
    named = {path.split(".", 1)[0] for path, _, _ in kb.setting_changes}
    items = [f"  - `{path} {_value(old)} → {_value(new)}`" for path, old, new in kb.setting_changes]
    unnamed = [part for part in kb.fingerprint_changes if part not in named]
    if unnamed:
        why = (
            "values unknown: the live documents were indexed before settings were recorded"
            if kb.previous_settings is None
            else "no described setting differs"
        )
        items.append(f"  - {', '.join(map(_code, unnamed))} changed ({why})")
    return ["- **Pipeline changes** (what makes the vectors):", *items]


def _rebuild(kb: KnowledgeBaseReport) -> str:
    rebuild = kb.rebuild
    if rebuild is None:
        return ""
    # One verdict: switched to, or not and why, never both.
    then = f"not switched: {_text(rebuild.blocked)}" if rebuild.blocked else "then switch"
    text = (
        f"- **Rebuild** beside {_code(rebuild.live)}: "
        f"{_count(rebuild.chunks_to_embed, 'chunk')} to embed into "
        f"{_code(rebuild.target)} ({_text(', '.join(rebuild.changed))} changed), {then}; "
        f"{_code(rebuild.live)} serves searches until the switch"
    )
    if rebuild.waiting and not rebuild.blocked:
        text += f"; {_text(rebuild.waiting)}"
    return text


def _guard(kb: KnowledgeBaseReport) -> str:
    guard = kb.deletion_guard
    if guard is None:
        kept = kb.count("keep")
        if kept:
            return (
                f"- **Deletion guard:** nothing deleted (prune is off): "
                f"{_count(kept, 'document')} kept whose file is gone"
            )
        return ""
    if not guard.deleting:
        return f"- **Deletion guard:** nothing to delete (of {_count(guard.documents, 'document')})"
    verdict = (
        f"would delete {guard.deleting:,} of {_count(guard.documents, 'document')} "
        f"({guard.share:.0%}), max_delete_fraction {guard.max_fraction:.0%}: "
    )
    if guard.refused:
        verdict += "**refused without `--force`**"
    elif guard.over:
        verdict += "over the limit, forced with `--force`"
    else:
        verdict += "within the limit"
    return f"- **Deletion guard:** {verdict}"


def _listing(heading: str, changes: list[Change], *, label: bool = False) -> list[str]:
    rows = []
    for change in sorted(changes, key=lambda c: (c.path, c.action)):
        said = [_action(change.action) if label else "", _text(change.reason)]
        why = ": ".join(part for part in said if part)
        rows.append(f"- {_code(change.path)}" + (f" — {why}" if why else ""))
    summary = f"{heading} ({len(changes):,})"
    if len(changes) > FOLD_OVER:
        return [f"<details><summary>{summary}</summary>", "", *rows, "", "</details>", ""]
    return [f"**{summary}**", "", *rows, ""]


def _action(action: str) -> str:
    return "kept" if action == "keep" else action


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}{'' if n == 1 else 's'}"


def _amount(value: float) -> str:
    """Two significant digits below 1, cents above; never an exponent."""
    if value == 0:
        return "0"
    if value >= 1:
        return f"{value:,.2f}"
    return f"{value:.{max(2, 1 - math.floor(math.log10(value)))}f}"


def _value(value: Any) -> str:
    if value is None:
        return "(unset)"
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _code(text: str) -> str:
    """``text`` as a code span, whatever backticks it holds."""
    fence = "`"
    while fence in text:
        fence += "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _text(text: str) -> str:
    """Plain text that Markdown and the HTML GitHub allows read as written."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
