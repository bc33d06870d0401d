"""`run --shard I/N` and `run --prune-only`: N CI jobs index one corpus, then one step prunes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from incremental._corpus import write_corpus, write_pipeline
from incremental.test_incremental import stored_chunks

from ragflow_config.cli import main
from ragflow_config.pipeline import Pipeline, RunOptions


def run(pipeline: Path, *flags: str) -> int:
    return main(["run", str(pipeline), "--workers", "0", "--json", *flags])


def rows(capsys: pytest.CaptureFixture[str]) -> list[dict[str, Any]]:
    [kb] = json.loads(capsys.readouterr().out)["knowledge_bases"]
    return list(kb["changes"])


def changes(capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    return {change["path"]: change["action"] for change in rows(capsys)}


async def document_ids(pipeline: Path) -> dict[str, str]:
    async with Pipeline.load(pipeline).build() as built:
        return {
            s.source: s.document_id for s in await built.knowledge_base("docs").list_documents()
        }


def test_shards_index_every_file_once_and_together_equal_one_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    files = write_corpus(corpus, 30)
    sharded = write_pipeline(tmp_path / "sharded.yaml", store_path=tmp_path / "a", corpus=corpus)
    whole = write_pipeline(tmp_path / "whole.yaml", store_path=tmp_path / "b", corpus=corpus)
    capsys.readouterr()

    seen: list[str] = []
    for index in (1, 2, 3):
        assert run(sharded, "--shard", f"{index}/3") == 0
        shard = changes(capsys)
        assert set(shard.values()) == {"add"}
        assert 0 < len(shard) < len(files)  # a real part, not all or nothing
        seen += shard
    assert sorted(seen) == sorted(files)  # every file once, in exactly one shard

    assert run(whole) == 0
    assert asyncio.run(stored_chunks(Pipeline.load(sharded))) == asyncio.run(
        stored_chunks(Pipeline.load(whole))
    )


def test_shards_leave_gone_files_to_the_prune_only_step_and_its_guard(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    files = sorted(write_corpus(corpus, 20))
    pipeline = write_pipeline(
        tmp_path / "p.yaml", store_path=tmp_path / "s", corpus=corpus, max_delete_fraction=0.1
    )
    assert run(pipeline) == 0
    gone = files[:4]  # 20 %: more than max_delete_fraction
    ids = asyncio.run(document_ids(pipeline))
    for relative in gone:
        (corpus / relative).unlink()
    capsys.readouterr()

    kept: list[dict[str, Any]] = []
    for index in (1, 2):
        assert run(pipeline, "--shard", f"{index}/2") == 0  # the guard is not a shard's business
        kept += [row for row in rows(capsys) if row["action"] == "keep"]
    # Each gone file reported once, by its own shard, naming its document and why it stays.
    assert sorted((row["path"], row["document_id"], row["reason"]) for row in kept) == [
        (path, ids[path], "source file is gone; a shard leaves pruning to `run --prune-only`")
        for path in gone
    ]
    assert len(asyncio.run(stored_chunks(Pipeline.load(pipeline)))) == len(files)

    assert run(pipeline, "--prune-only") == 1  # 4 of 20: the guard refuses
    capsys.readouterr()
    assert run(pipeline, "--prune-only", "--force") == 0
    deleted = sorted((row["path"], row["action"], row["document_id"]) for row in rows(capsys))
    assert deleted == [(path, "delete", ids[path]) for path in gone]  # and nothing indexed again
    stored = asyncio.run(stored_chunks(Pipeline.load(pipeline)))
    assert sorted(stored) == files[4:]


def test_a_shard_outside_one_to_n_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    for bad in ("0/3", "4/3", "two/3"):
        with pytest.raises(SystemExit):
            main(["run", "p.yaml", "--shard", bad])
        assert "--shard" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["run", "p.yaml", "--shard", "1/2", "--prune-only"])


async def test_the_python_api_takes_a_shard_too(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 12)
    pipeline = Pipeline.load(
        write_pipeline(tmp_path / "p.yaml", store_path=tmp_path / "s", corpus=corpus)
    )
    parts = [
        await pipeline.run(options=RunOptions(workers=0, shard=(index, 3))) for index in range(3)
    ]
    assert sum(len(report.knowledge_bases[0].changes) for report in parts) == 12
