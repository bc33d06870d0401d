"""Runs keep a hybrid knowledge base's lexical side in step, on a real Qdrant store on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragflow_config.pipeline import Pipeline, RunOptions, RunRefused
from ragflow_config.pipeline._run import fingerprint

from ._corpus import write_pipeline

IN_PROCESS = RunOptions(workers=0)
HYBRID = "retrieval: {mode: hybrid}"


def pipeline(tmp_path: Path, corpus: Path, retrieval: str = HYBRID) -> Pipeline:
    path = write_pipeline(
        tmp_path / "pipeline.yaml",
        store_path=tmp_path / "store",
        corpus=corpus,
        retrieval=retrieval,
    )
    return Pipeline.load(path)


async def lexical_sources(pipe: Pipeline, query: str) -> set[str]:
    """The sources a lexical search of the pipeline's store finds for ``query``."""
    async with pipe.build() as built:
        kb = built.knowledge_bases["docs"]
        store, collection = kb.vector_store, await kb.live_collection()
        counts, _ = kb._analyzer.term_counts(query)  # type: ignore[union-attr]
        weights = dict.fromkeys(counts, 1.0)
        hits = await store.lexical_search(collection, weights, top_k=1000)
        return {hit.chunk.source for hit in hits}


async def stored_chunk_count(pipe: Pipeline) -> tuple[int, int]:
    """(chunks the documents list, chunks the lexical side counts)."""
    async with pipe.build() as built:
        kb = built.knowledge_bases["docs"]
        listed = sum(s.chunk_count for s in await kb.list_documents())
        total, _ = await kb.vector_store.term_counts(kb.collection, [])
        return listed, total


async def test_edits_deletions_and_prunes_leave_no_stale_terms(
    tmp_path: Path, corpus: Path
) -> None:
    pipe = pipeline(tmp_path, corpus)
    await pipe.run(options=IN_PROCESS)
    assert "part0/doc000.md" in await lexical_sources(pipe, "river mountain cloud")
    (corpus / "part0/doc000.md").write_text("# Edited\n\nonly xylophones now.\n", encoding="utf-8")
    (corpus / "part1/doc001.md").write_text("# Edited\n\nxylophone.\n", encoding="utf-8")
    (corpus / "part2/doc002.md").unlink()
    await pipe.run(options=IN_PROCESS)

    found = await lexical_sources(pipe, "river mountain cloud engine harbor lantern orchard")
    assert found and not found & {"part0/doc000.md", "part1/doc001.md", "part2/doc002.md"}
    assert await lexical_sources(pipe, "xylophone") == {"part0/doc000.md", "part1/doc001.md"}
    listed, counted = await stored_chunk_count(pipe)
    assert listed == counted  # IDF's chunk count is exactly the stored chunks


async def test_an_analyzer_change_reindexes_or_is_refused(tmp_path: Path, corpus: Path) -> None:
    stemmed = pipeline(tmp_path, corpus)
    await stemmed.run(options=IN_PROCESS)
    assert await lexical_sources(stemmed, "voyage")  # stored as its stem, "voyag"
    unstemmed = pipeline(tmp_path, corpus, "retrieval: {mode: hybrid, analyzer: {stemming: false}}")
    with pytest.raises(RunRefused, match="lexical"):
        await unstemmed.run(options=RunOptions(workers=0, on_fingerprint_change="refuse"))

    report = (await unstemmed.run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.fingerprint_changes == ["lexical"]
    assert report.count("update") == 30
    assert await lexical_sources(stemmed, "voyage") == set()  # no stem is stored any more
    assert await lexical_sources(unstemmed, "voyage")


async def test_fusion_settings_are_query_time_and_dense_fingerprints_are_unchanged(
    tmp_path: Path, corpus: Path
) -> None:
    await pipeline(tmp_path, corpus).run(options=IN_PROCESS)
    weighted = pipeline(tmp_path, corpus, "retrieval: {mode: hybrid, fusion: {method: weighted}}")
    report = (await weighted.run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.count("unchanged") == 30

    path = write_pipeline(tmp_path / "dense.yaml", store_path=tmp_path / "dense", corpus=corpus)
    dense = Pipeline.load(path)
    async with dense.build() as built:
        assert set(fingerprint(built.indexing["docs"])) == {"embedding", "chunker", "parsers"}
