"""Re-runs on a local Qdrant folder answered by its snapshot (issue 40).

An unchanged re-run, or a ``plan``, asks the folder what the run before it
left there; that run kept the answers beside the engine's files, so nothing is
loaded. Any change to the files loads the folder again.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ragflow_config.pipeline import Pipeline, RunOptions

from ._corpus import write_pipeline

IN_PROCESS = RunOptions(workers=0)


def folder_loads(caplog: pytest.LogCaptureFixture) -> int:
    """How often a store loaded its local folder (its INFO line), since the last clear."""
    return sum("points of" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("tenant", ["", "metadata_filter: {tenant: acme}"])
async def test_unchanged_re_runs_and_plans_do_not_load_the_folder(
    tmp_path: Path, corpus: Path, caplog: pytest.LogCaptureFixture, tenant: str
) -> None:
    path = write_pipeline(
        tmp_path / "pipeline.yaml", store_path=tmp_path / "store", corpus=corpus,
        metadata_filter=tenant,
    )  # fmt: skip
    caplog.set_level(logging.INFO, logger="ragflow_config.stores")
    first = await Pipeline.load(path).run(options=IN_PROCESS)
    assert first.knowledge_bases[0].count("add") == 30

    caplog.clear()
    again = await Pipeline.load(path).run(options=IN_PROCESS)
    assert again.knowledge_bases[0].count("unchanged") == 30
    plan = await Pipeline.load(path).run(options=RunOptions(dry_run=True))
    assert plan.knowledge_bases[0].count("unchanged") == 30
    assert folder_loads(caplog) == 0

    # An edit: this run loads the folder (it writes), and the next run sees the edit.
    (corpus / "part0/doc000.md").write_text("# Edited\n\nlantern harbor.\n", encoding="utf-8")
    (corpus / "part1/doc001.md").unlink()
    edited = await Pipeline.load(path).run(options=IN_PROCESS)
    assert (
        edited.knowledge_bases[0].count("update"),
        edited.knowledge_bases[0].count("delete"),
    ) == (1, 1)
    assert folder_loads(caplog) == 1

    caplog.clear()
    after = await Pipeline.load(path).run(options=IN_PROCESS)
    assert after.knowledge_bases[0].count("unchanged") == 29
    assert not after.knowledge_bases[0].pending
    assert folder_loads(caplog) == 0
    async with Pipeline.load(path).build() as built:
        hits = await built.knowledge_bases["docs"].search(["lantern harbor"], top_k=1)
    assert hits[0].chunk.source.endswith("doc000.md")
    assert "lantern harbor" in hits[0].chunk.content.text


async def test_a_folder_changed_by_another_pipeline_is_loaded_again(
    tmp_path: Path, corpus: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Two pipelines share the folder: the second's writes change the engine's files,
    so the first's snapshot no longer answers and its next re-run loads the folder."""
    store = tmp_path / "store"
    one = write_pipeline(
        tmp_path / "one.yaml", store_path=store, corpus=corpus,
        metadata_filter="metadata_filter: {tenant: one}",
    )  # fmt: skip
    other_corpus = tmp_path / "other-corpus"
    (other_corpus / "a").mkdir(parents=True)
    (other_corpus / "a" / "note.md").write_text("# Note\n\nquartz meadow.\n", encoding="utf-8")
    other = write_pipeline(
        tmp_path / "other.yaml", store_path=store, corpus=other_corpus,
        metadata_filter="metadata_filter: {tenant: other}",
    )  # fmt: skip
    await Pipeline.load(one).run(options=IN_PROCESS)
    await Pipeline.load(other).run(options=IN_PROCESS)

    caplog.set_level(logging.INFO, logger="ragflow_config.stores")
    report = await Pipeline.load(one).run(options=IN_PROCESS)
    assert report.knowledge_bases[0].count("unchanged") == 30
    assert folder_loads(caplog) == 1
