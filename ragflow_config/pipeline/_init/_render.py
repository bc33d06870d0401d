"""The pipeline file ``init`` writes: YAML with a comment on every decision."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..._extras import install_line
from ._choose import Block, Draft
from ._survey import FolderSurvey

_COMMENT_COLUMN = 38
_PLAIN = re.compile(r"[A-Za-z_./][A-Za-z0-9_./-]*")
_NOT_STRINGS = {"true", "false", "yes", "no", "on", "off", "null", "y", "n"}


@dataclass(frozen=True)
class Target:
    """Where things go, as the file names them (relative to the file's folder)."""

    file: str  # the pipeline file, as the user names it in commands
    source: str  # the folder, relative to the file's folder
    allow_outside: bool  # the folder lies outside what a pipeline file there may read
    exclude: list[str]  # patterns of files in the folder that are not documents
    schema: str  # the JSON Schema, relative to the file's folder
    name: str  # the knowledge base
    collection: str
    #: A remote source's block (``type`` and ``parameters``), in place of ``path``.
    remote: dict[str, Any] | None = None
    #: Whether the survey saw the remote source's whole listing, not a sample of it.
    whole: bool = True


def render(draft: Draft, found: FolderSurvey, target: Target) -> str:
    lines = [
        f"# yaml-language-server: $schema={target.schema}",
        "#",
        f"# Written by `ragflow-config init` for the {found.files} files in {target.source}/.",
        "# Install what it needs (once):",
        "#",
        f"#   {install_line(draft.extras)}",
        "#",
        "# then check it, index the folder, and ask it something:",
        "#",
        f"#   ragflow-config validate {target.file}",
        f"#   ragflow-config run {target.file}",
        f'#   ragflow-config search {target.file} {target.name} "your question"',
        "#",
        "# `run` again after the files change: it indexes only what changed.",
        "version: 1",
        "",
        "vector_stores:",
        "  local:",
        *_block(draft.store, 4),
        "",
        "embeddings:",
        "  model:",
        *_block(draft.embedding, 4),
        "",
        "knowledge_bases:",
        f"  - name: {target.name}",
        f"    description: {_scalar(f'The files in {target.source}/.')}",
        "    sources:",
        *_source(target),
        _commented(
            f"        include: {_flow_list(_included(draft, found))}",
            "the types found; add a pattern (and a parser) to index others",
        ),
    ]
    if target.exclude:
        lines.append(f"        exclude: {_flow_list(target.exclude)}")
    if target.allow_outside:
        lines.append(
            _commented("        allow_outside: true", "the folder is outside this file's folder")
        )
    for media_type in draft.unread:
        example = found.examples[media_type]
        what = media_type or "unknown type"
        lines.append(
            f"        # left out: {found.counts[media_type]} file(s) of {what}, e.g. {example}"
        )
    lines += [
        "    # The first parser that reads a file's type takes it: the ones that read a type",
        "    # by its structure (headings, records, pages) come before `text`, which reads",
        "    # Markdown, HTML, CSV and JSON too, as flat text.",
        "    parsers:",
    ]
    for parser in draft.parsers:
        lines += _block(parser, 8, item=True)
    lines += [
        "    # Sizes are counted in the model's word pieces, so that no chunk is longer than",
        "    # the model reads: `run` reports any chunk it truncates.",
        "    chunker:",
        *_block(draft.chunker, 6),
        "    embedding: model",
        "    vector_store: local",
        f"    collection: {target.collection}",
        _commented("    prune: true", "delete the documents whose file is gone"),
        "    # How good are the answers? Write judged queries, uncomment, then",
        f"    # `ragflow-config eval {target.file}` scores the top k of each:",
        "    # evaluation:",
        "    #   queries: queries.yaml          # relative to this file; each query is, e.g.:",
        "    #                                  #   queries:",
        "    #                                  #     - id: q1",
        '    #                                  #       query: "How do I ...?"',
        f"    #                                  #       relevant: [{{source: {_example(draft, found)}, grade: 3}}]",
        "    #   k: 5",
        "    #   thresholds: {recall: 0.7, mrr: 0.5}   # eval exits 1 below these",
        "",
    ]
    return "\n".join(lines)


def _source(target: Target) -> list[str]:
    """The source block's first lines: a folder's ``path``, or a remote kind's block."""
    if target.remote is None:
        return [f"      - path: {_scalar(target.source)}"]
    lines = [
        f"      - type: {target.remote['type']}",
        f"        parameters: {_flow(target.remote['parameters'])}",
    ]
    if not target.whole:
        lines.insert(0, "      # The types below come from a sample of the listing: check them.")
    return lines


def _included(draft: Draft, found: FolderSurvey) -> list[str]:
    unread = set(draft.unread)
    return sorted(
        {p for t, patterns in found.patterns.items() if t not in unread for p in patterns}
    )


def _example(draft: Draft, found: FolderSurvey) -> str:
    """A file the knowledge base reads, as a judged query names it: relative to the folder."""
    return _scalar(next(found.examples[t] for t in found.counts if t not in draft.unread))


def _block(block: Block, indent: int, item: bool = False) -> list[str]:
    """``type:`` (with the block's comment) and ``parameters:`` as one flow mapping."""
    first = " " * (indent - 2) + "- " if item else " " * indent
    pad = " " * indent
    if not block.parameters:
        return [_commented(f"{first}type: {block.type}", block.comment)]
    return [
        f"{first}type: {block.type}",
        _commented(f"{pad}parameters: {_flow(block.parameters)}", block.comment),
    ]


def _commented(line: str, comment: str) -> str:
    """``line`` with ``comment`` at the comment column, or above it when the line is long."""
    if not comment:
        return line
    if len(line) >= _COMMENT_COLUMN - 1:
        indent = line[: len(line) - len(line.lstrip(" -"))].replace("-", " ")
        return f"{indent}# {comment}\n{line}"
    return f"{line.ljust(_COMMENT_COLUMN - 1)} # {comment}"


def _flow(mapping: dict[str, Any]) -> str:
    return "{" + ", ".join(f"{key}: {_scalar(value)}" for key, value in mapping.items()) + "}"


def _flow_list(values: list[str]) -> str:
    return "[" + ", ".join(json.dumps(value) for value in values) + "]"


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _NOT_STRINGS:
        return text
    return json.dumps(text, ensure_ascii=False)
