"""Large files: skipped past `max_file_bytes` before they are read; below it, vectors in batches."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.executors.local import _prepare
from ragflow_config.pipeline import Pipeline, RunOptions
from ragflow_config.rag import ApproxTokenChunker, KnowledgeBase, TextParser

from .test_run import GOOD, actions, documents, edit, make_project


async def test_a_file_over_max_file_bytes_is_skipped_with_its_size(tmp_path: Path) -> None:
    path = make_project(tmp_path, broken=False)
    path.write_text(path.read_text() + "    max_file_bytes: 1000\n", encoding="utf-8")
    (tmp_path / "docs" / "huge.log.txt").write_text("a log line\n" * 100, encoding="utf-8")
    pipeline = Pipeline.load(path)

    report = await pipeline.run(options=RunOptions(workers=0))

    assert actions(report)["huge.log.txt"] == "unsupported"
    [kb] = report.knowledge_bases
    [reason] = [c.reason for c in kb.changes if c.path == "huge.log.txt"]
    assert reason == "1,100 bytes, more than max_file_bytes (1,000); raise it to index the file"
    assert sorted(await documents(pipeline)) == sorted(GOOD)
    assert not report.failed


async def test_files_over_the_limit_in_a_row_are_skipped_alone_and_one_at_it_is_indexed(
    tmp_path: Path,
) -> None:
    path = make_project(tmp_path, broken=False)
    path.write_text(path.read_text() + "    max_file_bytes: 1000\n", encoding="utf-8")
    # More files over the limit than the run has files in flight, listed first.
    for i in range(6):
        (tmp_path / "docs" / f"a-huge-{i}.txt").write_text("x " * 600, encoding="utf-8")
    (tmp_path / "docs" / "at-limit.txt").write_text("word " * 200, encoding="utf-8")
    pipeline = Pipeline.load(path)

    report = await pipeline.run(options=RunOptions(workers=0))

    found = actions(report)
    assert {name: found.pop(name) for name in list(found) if "huge" in name} == {
        f"a-huge-{i}.txt": "unsupported" for i in range(6)
    }
    assert found == {**dict.fromkeys(GOOD, "add"), "at-limit.txt": "add", "logo.bin": "unsupported"}


async def test_a_file_past_the_inline_read_size_is_read_and_indexed_whole(tmp_path: Path) -> None:
    # Files over 1 MiB are read off the event loop, in a thread: the same bytes, indexed.
    path = make_project(tmp_path, broken=False)
    edit(path, "chunk_size: 32, overlap: 4", "chunk_size: 8000")
    lines = [f"Line {i} of the long log.\n" for i in range(60_000)]
    (tmp_path / "docs" / "long.log.txt").write_text("".join(lines), encoding="utf-8")
    assert (tmp_path / "docs" / "long.log.txt").stat().st_size > 1 << 20
    pipeline = Pipeline.load(path)

    report = await pipeline.run(options=RunOptions(workers=0))

    assert actions(report)["long.log.txt"] == "add"
    summary = (await documents(pipeline))["long.log.txt"]
    async with pipeline.build() as built:
        chunks = await built.knowledge_base("docs").list_chunks(summary.document_id, limit=100_000)
    text = " ".join(chunk.content.text for chunk in chunks)  # type: ignore[union-attr]
    assert "Line 0 of the long log." in text and "Line 59999 of the long log." in text


async def test_a_parser_process_leaves_a_document_of_many_batches_to_be_embedded_batchwise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its vectors, made at once in the worker, would all be in memory at once: two processes."""
    monkeypatch.setattr(KnowledgeBase, "write_batch", 4)
    model = HashingEmbeddingModel(dimensions=16)
    chunker = ApproxTokenChunker(chunk_size=8, overlap=0)
    parser = TextParser()

    small, small_vectors = await _prepare(parser, chunker, model, b"one two three", "a.txt")
    assert small_vectors is not None and len(small_vectors.embeddings) == len(small)

    text = " ".join(f"word{i}" for i in range(200)).encode()
    large, large_vectors = await _prepare(parser, chunker, model, text, "b.txt")
    assert len(large) > 4 and large_vectors is None
