"""`plan --format markdown`, the body of a pull-request comment, against golden files.

Each scenario runs real plans (the hashing model, Qdrant on local disk) over a
tiny corpus and renders the report; its text must equal
`tests/cli/golden/plan_<scenario>.md`. A change of the comment's wording or
layout therefore shows in review as a diff of those files. Regenerate them
after a deliberate change with

    python tests/cli/test_plan_markdown.py
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from ragflow_config.cli._plan_markdown import FOLD_OVER, plan_markdown
from ragflow_config.pipeline import (
    Change,
    KnowledgeBaseReport,
    Pipeline,
    RunOptions,
    RunRefused,
    RunReport,
)

GOLDEN = Path(__file__).resolve().parent / "golden"
REGENERATE = "python tests/cli/test_plan_markdown.py"
IN_PROCESS = RunOptions(workers=0)

PIPELINE = """\
version: 1
vector_stores:
  disk: {type: qdrant, parameters: {path: store}}
embeddings:
  hashing:
    type: hashing
    parameters: {dimensions: 64%(price)s}
knowledge_bases:
  - name: docs
    sources: [{path: docs}]
    chunker: {type: approx_token, parameters: {chunk_size: 256, overlap: 16}}
    embedding: hashing
    vector_store: disk
    collection: docs
    prune: true
    max_delete_fraction: 0.5
"""

TOPICS = ("apples", "bees", "clouds", "dunes", "eels", "ferns")


def _topic(name: str, lines: int = 3) -> str:
    return f"# {name.title()}\n\n" + "".join(
        f"Line {i} says something about {name}, plainly and at some length.\n" for i in range(lines)
    )


def _project(folder: Path, files: dict[str, str], *, price: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pipeline.yaml").write_text(
        PIPELINE % {"price": f", price_per_million_tokens: {price}" if price else ""},
        encoding="utf-8",
    )
    for relative, text in files.items():
        (folder / "docs" / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / "docs" / relative).write_text(text, encoding="utf-8")
    return folder / "pipeline.yaml"


def _plan(path: Path, **options: object) -> RunReport:
    dry = RunOptions(dry_run=True, workers=0, **options)  # type: ignore[arg-type]
    return asyncio.run(Pipeline.load(path).run(options=dry))


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def in_place(folder: Path) -> str:
    """Added, updated, deleted and skipped files, indexed in place, with a price."""
    path = _project(folder, {f"{t}.md": _topic(t) for t in TOPICS}, price="0.02")
    asyncio.run(Pipeline.load(path).run(options=IN_PROCESS))
    docs = folder / "docs"
    (docs / "guide").mkdir()
    (docs / "guide" / "gulls.md").write_text(_topic("gulls", 40), encoding="utf-8")
    (docs / "hills.txt").write_text(_topic("hills"), encoding="utf-8")
    (docs / "bees.md").write_text(_topic("bees", 5), encoding="utf-8")
    (docs / "eels.md").unlink()
    (docs / "logo.bin").write_bytes(bytes(range(256)))  # no parser for binary content
    (docs / "blank.txt").write_text("\n\n", encoding="utf-8")  # nothing to index
    (docs / "broken.txt").write_bytes("caf\xe9 au lait\n".encode("latin-1"))  # not utf-8
    return plan_markdown(_plan(path), title="Plan for `pipeline.yaml`")


def rebuild(folder: Path) -> str:
    """chunk_size 256 → 128: every document re-embedded beside the live collection."""
    files = {f"notes/{i:02d}-{t}.md": _topic(t, 8) for i, t in enumerate(TOPICS * 2)}
    path = _project(folder, files)
    asyncio.run(Pipeline.load(path).run(options=IN_PROCESS))
    _edit(path, "chunk_size: 256", "chunk_size: 128")
    return plan_markdown(_plan(path))


def refused(folder: Path) -> str:
    """Four of six files gone: the deletion guard refuses (the plan still shows it all)."""
    path = _project(folder, {f"{t}.md": _topic(t) for t in TOPICS})
    asyncio.run(Pipeline.load(path).run(options=IN_PROCESS))
    for topic in TOPICS[:4]:
        (folder / "docs" / f"{topic}.md").unlink()
    with pytest.raises(RunRefused, match="would delete 4 of 6 documents"):
        _plan(path)  # without report_refusal, a plan refuses as it always did
    return plan_markdown(_plan(path, report_refusal=True))


def legacy() -> str:
    """A report as a plan gives for documents indexed before settings were recorded,
    with prune off: the changed parts are named without values, gone files kept."""
    kb = KnowledgeBaseReport(
        "manuals",
        changes=[
            Change("update", "b.md", "id-b", "pipeline changed: chunker, parsers"),
            Change("update", "a.md", "id-a", "content changed"),
            Change("keep", "gone.md", "id-g", "source file is gone; prune is off"),
            Change("unchanged", "c.md", "id-c"),
        ],
        fingerprint_changes=["chunker", "parsers"],
        live_collection="manuals",
        chunks_to_embed=7,
        bytes_to_embed=4_000,
        embedding_model="text-embedding-3-small",
        price_per_million_tokens=0.02,
    )
    return plan_markdown(RunReport([kb], seconds=12.5, dry_run=True))


SCENARIOS: dict[str, Callable[[Path], str]] = {
    "in_place": in_place,
    "rebuild": rebuild,
    "refused": refused,
    "legacy": lambda folder: legacy(),
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_plan_comment_matches_its_golden_file(name: str, tmp_path: Path) -> None:
    golden = GOLDEN / f"plan_{name}.md"
    assert SCENARIOS[name](tmp_path) == golden.read_text(encoding="utf-8"), (
        f"{golden.name} is stale; if the change is deliberate, run `{REGENERATE}`"
    )


def test_the_comment_names_each_changed_value_and_the_rebuild(tmp_path: Path) -> None:
    text = rebuild(tmp_path)
    assert "`chunker.parameters.chunk_size 256 → 128`" in text
    assert "- **Rebuild** beside `docs`: 16 chunks to embed into `docs__" in text
    assert "(chunker changed), then switch;" in text
    assert "<details><summary>Update (12)</summary>" in text and FOLD_OVER < 12


def test_the_same_plan_gives_the_same_text(tmp_path: Path) -> None:
    """No time, no absolute path: two folders, one text."""
    assert in_place(tmp_path / "one") == in_place(tmp_path / "two")


def _regenerate() -> None:
    GOLDEN.mkdir(exist_ok=True)
    for name, scenario in sorted(SCENARIOS.items()):
        with tempfile.TemporaryDirectory() as folder:
            (GOLDEN / f"plan_{name}.md").write_text(scenario(Path(folder)), encoding="utf-8")
        print(f"wrote {GOLDEN / f'plan_{name}.md'}", file=sys.stderr)


if __name__ == "__main__":
    _regenerate()


def test_plan_prints_the_comment_and_exits_1_where_a_run_would_refuse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragflow_config.cli import main

    path = _project(tmp_path, {f"{t}.md": _topic(t) for t in TOPICS})
    asyncio.run(Pipeline.load(path).run(options=IN_PROCESS))
    _edit(path, "chunk_size: 256", "chunk_size: 128")
    assert main(["plan", str(path), "--format", "markdown"]) == 0
    printed = capsys.readouterr().out
    assert printed == plan_markdown(_plan(path), title=f"Plan: `{path}`")
    assert "`chunker.parameters.chunk_size 256 → 128`" in printed

    for topic in TOPICS[:4]:
        (tmp_path / "docs" / f"{topic}.md").unlink()
    assert main(["plan", str(path), "--format", "markdown"]) == 1
    assert "refused without `--force`" in capsys.readouterr().out
