"""Re-runs do exactly the needed work, on a real Qdrant store on disk."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import ClassVar

import pytest

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import DataBlock
from ragflow_config.pipeline import Pipeline, Registry, RunOptions, RunRefused
from ragflow_config.rag import Section, TextParser, VectorRecord

from ._corpus import write_corpus, write_pipeline

IN_PROCESS = RunOptions(workers=0)


class CountingTextParser(TextParser):
    calls: ClassVar[list[str]] = []

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        CountingTextParser.calls.append(filename)
        return await super().parse(file, filename)


class CountingHashingModel(HashingEmbeddingModel):
    texts: ClassVar[int] = 0

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        CountingHashingModel.texts += len(batch)
        return await super().embed_batch(batch)


@pytest.fixture
def registry() -> Registry:
    registry = Registry.from_entry_points()
    registry.register("parser", "counting_text", CountingTextParser)
    registry.register("embedding", "counting_hashing", CountingHashingModel)
    CountingTextParser.calls.clear()
    CountingHashingModel.texts = 0
    return registry


def counting_pipeline(
    tmp_path: Path, corpus: Path, registry: Registry, **kwargs: object
) -> Pipeline:
    path = write_pipeline(
        tmp_path / "pipeline.yaml",
        store_path=tmp_path / "store",
        corpus=corpus,
        parser_type="counting_text",
        embedding_type="counting_hashing",
        **kwargs,  # type: ignore[arg-type]
    )
    return Pipeline.load(path, registry)


async def stored_chunks(pipeline: Pipeline) -> dict[str, list[tuple[int, str]]]:
    """Every stored chunk, by source path: (chunk_index, text), sorted."""
    async with pipeline.build() as built:
        kb = built.knowledge_bases["docs"]
        result = {}
        for summary in await kb.list_documents():
            chunks = await kb.list_chunks(summary.document_id, limit=10_000)
            result[summary.source] = sorted((c.chunk_index, c.content.text) for c in chunks)
        return result


async def test_unchanged_rerun_parses_and_embeds_nothing(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    pipeline = counting_pipeline(tmp_path, corpus, registry)
    first = await pipeline.run(options=IN_PROCESS)
    assert first.knowledge_bases[0].count("add") == 30
    assert len(CountingTextParser.calls) == 30
    assert CountingHashingModel.texts == first.knowledge_bases[0].chunks > 30

    CountingTextParser.calls.clear()
    CountingHashingModel.texts = 0
    second = await pipeline.run(options=IN_PROCESS)
    report = second.knowledge_bases[0]
    assert report.count("unchanged") == 30
    assert not report.pending
    assert CountingTextParser.calls == []
    assert CountingHashingModel.texts == 0


async def test_edit_add_remove_plan_then_run(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    pipeline = counting_pipeline(tmp_path, corpus, registry)
    await pipeline.run(options=IN_PROCESS)
    (corpus / "part0/doc000.md").write_text(
        "# Edited\n\nlantern harbor only now.\n", encoding="utf-8"
    )
    (corpus / "part1/new.md").write_text(
        "# New\n\nan entirely new zephyr file.\n", encoding="utf-8"
    )
    (corpus / "part2/doc002.md").unlink()

    CountingTextParser.calls.clear()
    plan = await pipeline.run(options=RunOptions(workers=0, dry_run=True))
    changes = {
        (c.action, c.path) for c in plan.knowledge_bases[0].changes if c.action != "unchanged"
    }
    assert changes == {
        ("update", "part0/doc000.md"),
        ("add", "part1/new.md"),
        ("delete", "part2/doc002.md"),
    }
    # A plan parses what the run would write (issue 52): to tell a file a run would store
    # from one it would skip, and to count the chunks the run writes.
    assert sorted(CountingTextParser.calls) == ["part0/doc000.md", "part1/new.md"]
    assert len(await stored_chunks(pipeline)) == 30  # ...and writes nothing

    CountingTextParser.calls.clear()
    report = (await pipeline.run(options=IN_PROCESS)).knowledge_bases[0]
    applied = {(c.action, c.path) for c in report.changes if c.action != "unchanged"}
    assert applied == changes
    assert sorted(CountingTextParser.calls) == ["part0/doc000.md", "part1/new.md"]

    stored = await stored_chunks(pipeline)
    assert "part2/doc002.md" not in stored
    assert stored["part0/doc000.md"] == [(0, "# Edited\n\nlantern harbor only now.")]
    assert stored["part1/new.md"][0][1].startswith("# New")
    assert not (await pipeline.run(options=RunOptions(workers=0, dry_run=True))).pending


async def test_shrunk_document_leaves_no_old_chunks(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    pipeline = counting_pipeline(tmp_path, corpus, registry)
    await pipeline.run(options=IN_PROCESS)
    before = await stored_chunks(pipeline)
    longest = max(before, key=lambda source: len(before[source]))
    assert len(before[longest]) > 2
    (corpus / longest).write_text("# Short now\n\ncedar.\n", encoding="utf-8")
    await pipeline.run(options=IN_PROCESS)
    after = await stored_chunks(pipeline)
    assert after[longest] == [(0, "# Short now\n\ncedar.")]
    assert {k: v for k, v in after.items() if k != longest} == {
        k: v for k, v in before.items() if k != longest
    }


async def test_a_document_emptied_in_its_file_leaves_nothing_behind(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    pipeline = counting_pipeline(tmp_path, corpus, registry)
    await pipeline.run(options=IN_PROCESS)
    before = await stored_chunks(pipeline)
    one_chunk = min(before, key=lambda source: len(before[source]))
    several = max(before, key=lambda source: len(before[source]))
    assert len(before[one_chunk]) == 1 and len(before[several]) > 2
    for source in (one_chunk, several):
        (corpus / source).write_text("\n\n", encoding="utf-8")

    [kb] = (await pipeline.run(options=IN_PROCESS)).knowledge_bases

    assert {(c.path, c.action, c.chunks) for c in kb.changes if c.action != "unchanged"} == {
        (one_chunk, "update", 0),
        (several, "update", 0),
    }
    after = await stored_chunks(pipeline)
    assert after == {k: v for k, v in before.items() if k not in (one_chunk, several)}


async def test_editing_one_of_two_identical_files_leaves_the_other_whole(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    pipeline = counting_pipeline(tmp_path, corpus, registry)
    longest = max(sorted(corpus.rglob("*.md")), key=lambda path: path.stat().st_size)
    longest_source = longest.relative_to(corpus).as_posix()
    (corpus / "copy.md").write_text(longest.read_text(encoding="utf-8"), "utf-8")
    await pipeline.run(options=IN_PROCESS)  # the same content: the same revision, twice
    before = await stored_chunks(pipeline)
    assert before["copy.md"] == before[longest_source] and len(before["copy.md"]) > 2
    longest.write_text(longest.read_text(encoding="utf-8") + "\n\nOne more line.\n", "utf-8")

    await pipeline.run(options=IN_PROCESS)

    assert (await stored_chunks(pipeline))["copy.md"] == before["copy.md"]
    [kb] = (await pipeline.run(options=RunOptions(workers=0, dry_run=True))).knowledge_bases
    assert not kb.pending  # nothing for the next run to repair


async def test_chunk_size_change_reindexes_everything(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    await counting_pipeline(tmp_path, corpus, registry, chunk_size=64).run(options=IN_PROCESS)
    changed = counting_pipeline(tmp_path, corpus, registry, chunk_size=128)

    with pytest.raises(RunRefused, match="chunker"):
        await changed.run(options=RunOptions(workers=0, on_fingerprint_change="refuse"))

    CountingTextParser.calls.clear()
    report = (await changed.run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.fingerprint_changes == ["chunker"]
    assert report.count("update") == 30
    assert all("chunker" in c.reason for c in report.changes)
    assert len(CountingTextParser.calls) == 30
    texts = [text for chunks in (await stored_chunks(changed)).values() for _, text in chunks]
    assert max(len(t.encode()) for t in texts) > 64 * 4 + 3  # the new, larger chunks are stored
    assert not (await changed.run(options=RunOptions(workers=0, dry_run=True))).pending


async def test_mass_deletion_is_refused_without_force(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    pipeline = counting_pipeline(tmp_path, corpus, registry, max_delete_fraction=0.2)
    await pipeline.run(options=IN_PROCESS)
    for path in sorted(corpus.rglob("*.md"))[:10]:  # a third of the files
        path.unlink()
    with pytest.raises(RunRefused) as refused:
        await pipeline.run(options=IN_PROCESS)
    assert str(refused.value) == (
        "docs: the run would delete 10 of 30 documents (33%, more than max_delete_fraction 20%); "
        "check the sources (a moved folder or an empty checkout?); `ragflow-config plan "
        "--force` lists what would be deleted, and `--force` deletes it"
    )
    assert len(await stored_chunks(pipeline)) == 30  # refused before writing anything
    report = (await pipeline.run(options=RunOptions(workers=0, force=True))).knowledge_bases[0]
    assert report.count("delete") == 10
    assert len(await stored_chunks(pipeline)) == 20


async def test_prune_stays_within_its_tenant(tmp_path: Path, registry: Registry) -> None:
    store = tmp_path / "shared-store"
    pipelines = {}
    for tenant in ("a", "b"):
        corpus = tmp_path / f"corpus-{tenant}"
        write_corpus(corpus, 6, seed=ord(tenant))
        path = write_pipeline(
            tmp_path / f"{tenant}.yaml",
            store_path=store,
            corpus=corpus,
            metadata_filter=f"metadata_filter: {{tenant_id: {tenant}}}",
            max_delete_fraction=1.0,
        )
        pipelines[tenant] = (Pipeline.load(path, registry), corpus)
        await pipelines[tenant][0].run(options=IN_PROCESS)

    pipeline_a, corpus_a = pipelines["a"]
    for path in corpus_a.rglob("*.md"):
        path.unlink()
    report = (await pipeline_a.run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.count("delete") == 6
    assert await stored_chunks(pipeline_a) == {}
    assert len(await stored_chunks(pipelines["b"][0])) == 6  # tenant b is untouched


async def test_default_process_pool_gives_the_same_index(tmp_path: Path, corpus: Path) -> None:
    in_process = write_pipeline(tmp_path / "a.yaml", store_path=tmp_path / "a", corpus=corpus)
    pooled = write_pipeline(tmp_path / "b.yaml", store_path=tmp_path / "b", corpus=corpus)
    await Pipeline.load(in_process).run(options=IN_PROCESS)
    report = await Pipeline.load(pooled).run(options=RunOptions(workers=2))
    assert report.knowledge_bases[0].count("add") == 30
    assert await stored_chunks(Pipeline.load(in_process)) == await stored_chunks(
        Pipeline.load(pooled)
    )


async def test_chunk_0_holds_the_state_and_the_others_its_revision(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    pipeline = counting_pipeline(tmp_path, corpus, registry)
    await pipeline.run(options=IN_PROCESS)
    async with pipeline.build() as built:
        kb = built.knowledge_bases["docs"]
        summary = max(await kb.list_documents(), key=lambda s: s.chunk_count)
        chunks = await kb.list_chunks(summary.document_id, limit=100)
    state = chunks[0].metadata["ragflow"]
    assert state == summary.metadata["ragflow"]
    assert state["chunks"] == len(chunks) == summary.chunk_count > 2
    # What `list --json` shows of each document, and what the next run decides by.
    assert set(state) == {
        *("path", "source", "content_hash", "media_type", "size_bytes"),
        *("revision", "chunks", "fingerprint", "settings", "writer"),
    }
    assert state["writer"] == "pipeline.yaml#docs"  # the file's name and the knowledge base's
    # The fingerprint's parts, described (what a plan names as changed), beside their digests.
    assert (
        set(state["settings"]) == set(state["fingerprint"]) == {"embedding", "chunker", "parsers"}
    )
    assert state["settings"]["chunker"]["type"] == "approx_token"
    assert (state["media_type"], state["size_bytes"]) == (
        "text/markdown",
        (corpus / state["path"]).stat().st_size,
    )
    assert [c.metadata["ragflow"] for c in chunks[1:]] == [{"revision": state["revision"]}] * (
        len(chunks) - 1
    )


async def test_a_document_missing_chunk_0_is_repaired_not_taken_for_a_pipeline_change(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    pipeline = counting_pipeline(tmp_path, corpus, registry)
    await pipeline.run(options=IN_PROCESS)
    before = await stored_chunks(pipeline)
    async with pipeline.build() as built:  # what a run killed before its last write leaves
        kb = built.knowledge_bases["docs"]
        summary = max(await kb.list_documents(), key=lambda s: s.chunk_count)
        digest = summary.metadata["ragflow"]["content_hash"]
        await kb.vector_store.delete(
            kb.collection, summary.document_id, {"ragflow": {"content_hash": digest}}
        )

    strict = RunOptions(workers=0, on_fingerprint_change="refuse")
    report = (await pipeline.run(options=strict)).knowledge_bases[0]
    [repair] = [c for c in report.changes if c.action != "unchanged"]
    assert (repair.action, repair.path) == ("repair", summary.source)
    assert repair.reason == "chunk 0 is missing: a write was interrupted"
    assert report.fingerprint_changes == []
    assert await stored_chunks(pipeline) == before


async def test_a_document_missing_a_later_chunk_is_repaired_and_whole_again(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    pipeline = counting_pipeline(tmp_path, corpus, registry)
    await pipeline.run(options=IN_PROCESS)
    before = await stored_chunks(pipeline)
    async with pipeline.build() as built:  # the store lost the last chunk (restored from a backup)
        kb = built.knowledge_bases["docs"]
        summary = max(await kb.list_documents(), key=lambda s: s.chunk_count)
        kept = [
            VectorRecord(vector=vector, document_id=summary.document_id, chunk=chunk)
            for chunk, vector in await kb.vector_store.document_vectors(
                kb.collection, summary.document_id
            )
            if chunk.chunk_index < summary.chunk_count - 1
        ]
        await kb.vector_store.delete(kb.collection, summary.document_id)
        await kb.vector_store.insert(kb.collection, kept)
    expected = summary.chunk_count

    # `plan` names the file to repair, as the run does.
    plan = (await pipeline.run(options=RunOptions(workers=0, dry_run=True))).knowledge_bases[0]
    planned = [(c.action, c.path) for c in plan.changes if c.action != "unchanged"]
    assert planned == [("repair", summary.source)]
    report = (await pipeline.run(options=IN_PROCESS)).knowledge_bases[0]
    [repair] = [c for c in report.changes if c.action != "unchanged"]
    assert (repair.action, repair.path) == ("repair", summary.source)
    assert repair.reason == f"store holds {expected - 1} chunks, expected {expected}"
    assert await stored_chunks(pipeline) == before

    # Told not to repair, a run leaves such a document as it is.
    async with pipeline.build() as built:
        kb = built.knowledge_bases["docs"]
        await kb.vector_store.delete(kb.collection, summary.document_id)
        await kb.vector_store.insert(kb.collection, kept)
    report = (await pipeline.run(options=RunOptions(workers=0, repair=False))).knowledge_bases[0]
    assert {c.action for c in report.changes} == {"unchanged"}


async def test_a_run_holds_a_few_tasks_at_a_time_however_many_files(
    tmp_path: Path, corpus: Path, registry: Registry
) -> None:
    pipeline = counting_pipeline(tmp_path, corpus, registry)
    tasks_seen: list[int] = []
    options = RunOptions(
        workers=0, progress=lambda kb, change: tasks_seen.append(len(asyncio.all_tasks()))
    )
    await pipeline.run(options=options)
    # 30 files; 4 in flight in one process, plus the caller's task and the model's batches.
    assert len(tasks_seen) == 30 and max(tasks_seen) <= 1 + 4 + 4
