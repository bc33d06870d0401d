"""Prune deletes only what its own knowledge base wrote (issue 52, trap 8).

Two teams' pipeline files write one Qdrant collection on disk, neither with a
`metadata_filter`; team a prunes, team b does not. Team a's runs must never
delete, update or repair team b's documents: they report them as foreign, as
`plan` and `verify` do.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from ragflow_config.cli import main
from ragflow_config.pipeline import Pipeline, RunOptions, RunRefused, _run

IN_PROCESS = RunOptions(workers=0)


def team(folder: Path, name: str, files: int, *, prune: bool, chunk_size: int = 64) -> Pipeline:
    """Team ``name``'s pipeline file ``team-NAME.yaml`` over ``NAME-docs/``, into `shared`."""
    docs = folder / f"{name}-docs"
    if not docs.exists():
        docs.mkdir()
        for i in range(files):
            text = f"Team {name} note {i}: the lantern by the river burns {i} hours.\n"
            (docs / f"note{i}.md").write_text(text, encoding="utf-8")
    path = folder / f"team-{name}.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        version: 1
        vector_stores:
          store: {{type: qdrant, parameters: {{path: store}}}}
        embeddings:
          model: {{type: hashing, parameters: {{dimensions: 64}}}}
        knowledge_bases:
          - name: docs
            sources: [{{path: {name}-docs}}]
            chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 8}}}}
            embedding: model
            vector_store: store
            collection: shared
            prune: {str(prune).lower()}
        """),
        encoding="utf-8",
    )
    return Pipeline.load(path)


async def sources(pipeline: Pipeline) -> list[str]:
    """The sources of the documents the knowledge base's scope holds, both teams' alike."""
    async with pipeline.build() as built:
        return sorted(s.source for s in await built.knowledge_base("docs").list_documents())


async def test_a_prune_never_deletes_another_pipeline_files_documents(tmp_path: Path) -> None:
    # Both knowledge bases are named `docs`: only the writer tells them apart.
    a, b = team(tmp_path, "a", 20, prune=True), team(tmp_path, "b", 3, prune=False)
    await a.run(options=IN_PROCESS)
    await b.run(options=IN_PROCESS)
    team_b = {f"note{i}.md" for i in range(3)}

    (tmp_path / "a-docs" / "note0.md").write_text("Edited by team a.\n", encoding="utf-8")
    (tmp_path / "a-docs" / "note1.md").unlink()
    report = (await a.run(options=IN_PROCESS)).knowledge_bases[0]
    actions = {(c.path, c.action) for c in report.changes if c.action != "unchanged"}
    # Team b's three documents are reported, not deleted; team a's gone file is pruned.
    assert actions == {
        ("note0.md", "update"),
        ("note1.md", "delete"),
        *((path, "foreign") for path in team_b),
    }
    foreign = next(c for c in report.changes if c.action == "foreign")
    assert "written by team-b.yaml#docs" in foreign.reason
    assert "metadata_filter" in foreign.reason
    assert report.deletion_guard is not None and report.deletion_guard.documents == 20
    # 22 documents in the shared collection: team a's 19, team b's 3, which team b still has.
    assert len(await sources(a)) == 22
    b_report = (await b.run(options=IN_PROCESS)).knowledge_bases[0]
    assert b_report.count("unchanged") == 3 and b_report.count("keep") == 0
    assert b_report.count("foreign") == 19


def test_plan_and_verify_report_a_collection_shared_across_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    team(tmp_path, "a", 4, prune=True)
    team(tmp_path, "b", 2, prune=False)
    for name in ("a", "b"):
        assert main(["run", str(tmp_path / f"team-{name}.yaml"), "--workers", "0"]) == 0
    capsys.readouterr()
    assert main(["plan", str(tmp_path / "team-a.yaml")]) == 0
    plan = capsys.readouterr().out
    assert "foreign     note0.md  (written by team-b.yaml#docs" in plan, plan
    assert main(["verify", str(tmp_path / "team-a.yaml")]) == 1
    verify = capsys.readouterr().out
    assert "docs: foreign    note1.md  (written by team-b.yaml#docs" in verify, verify


async def test_a_rebuild_beside_a_collection_another_writer_shares_is_refused(
    tmp_path: Path,
) -> None:
    # A switch would move team b's reader (the same pointer) to a collection without its
    # documents, and retiring the old collection would delete them.
    await team(tmp_path, "a", 4, prune=True).run(options=IN_PROCESS)
    b = team(tmp_path, "b", 2, prune=False)
    await b.run(options=IN_PROCESS)
    changed = team(tmp_path, "a", 4, prune=True, chunk_size=32)
    plan = (await changed.run(options=RunOptions(workers=0, dry_run=True))).knowledge_bases[0]
    assert plan.rebuild is not None
    assert plan.rebuild.blocked is not None and "another writer" in plan.rebuild.blocked
    with pytest.raises(RunRefused, match="holds 2 document"):
        await changed.run(options=IN_PROCESS)
    assert await sources(b) == [
        "note0.md",
        "note0.md",
        "note1.md",
        "note1.md",
        "note2.md",
        "note3.md",
    ]


async def test_documents_written_before_writers_were_recorded_are_told_apart_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record without a writer belongs to the knowledge base whose name its id digests."""
    a = team(tmp_path, "a", 6, prune=True)
    b_path = tmp_path / "team-b.yaml"
    team(tmp_path, "b", 2, prune=False)
    b_path.write_text(b_path.read_text().replace("name: docs", "name: other"))
    await a.run(options=IN_PROCESS)
    with monkeypatch.context() as older:  # team b's run records no writer, as before
        older.setattr(_run, "WRITER_KEY", "not-the-writer")
        await Pipeline.load(b_path).run(options=IN_PROCESS)
    (tmp_path / "a-docs" / "note5.md").unlink()
    report = (await a.run(options=IN_PROCESS)).knowledge_bases[0]
    assert sorted((c.path, c.action) for c in report.changes if c.action != "unchanged") == [
        ("note0.md", "foreign"),
        ("note1.md", "foreign"),
        ("note5.md", "delete"),
    ]
    foreign = next(c for c in report.changes if c.action == "foreign")
    assert "written by a knowledge base not named 'docs'" in foreign.reason
