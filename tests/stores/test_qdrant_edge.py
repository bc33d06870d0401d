"""QdrantEdgeStore at scale: what its index finds, and what opening it loads.

The recall test: random unit vectors, the hardest case for a graph index (no clusters to follow), in
enough dimensions that each of the shard's segments passes the engine's full-scan
threshold and is searched through the graph, not compared vector by vector: the test
checks that it is. The exact answer is the engine's own exact search on the originals.
"""

from __future__ import annotations

import random

import pytest

from ragflow_config.rag import QdrantEdgeStore
from ragflow_config.rag._stores.qdrant_edge._connection import TERMS

from .conftest import make_record

pytest.importorskip("qdrant_edge", reason="qdrant-edge-py is not installed (extra: qdrant-edge)")

DIMENSIONS = 1536  # 6 KB a vector: 2,000 pass the engine's 10,000 KB full-scan threshold
POINTS = 4_000
QUERIES = 50
TOP_K = 10


def unit(rng: random.Random) -> list[float]:
    vector = [rng.gauss(0, 1) for _ in range(DIMENSIONS)]
    norm = sum(x * x for x in vector) ** 0.5
    return [x / norm for x in vector]


async def test_default_search_finds_95_percent_of_the_exact_top_10(tmp_path) -> None:
    rng = random.Random(5)
    records = [make_record(f"d{i}", 0, unit(rng)) for i in range(POINTS)]
    async with QdrantEdgeStore(path=str(tmp_path / "edge")) as store:
        await store.create_collection("recall", DIMENSIONS)
        await store.insert("recall", records)
    async with QdrantEdgeStore(path=str(tmp_path / "edge")) as store:  # optimized on close
        shard = await store._shard("recall")
        assert shard.info().indexed_vectors_count == POINTS  # searched through the graph
        edge = store._edge
        found = total = 0
        for _ in range(QUERIES):
            query = unit(rng)
            exact = shard.query(
                edge.QueryRequest(
                    limit=TOP_K,
                    query=edge.Query.Nearest(query),
                    with_payload=True,
                    params=edge.SearchParams(exact=True),
                )
            )
            truth = {point.payload["document_id"] for point in exact}
            hits = await store.search("recall", query, top_k=TOP_K)
            found += len(truth & {hit.document_id for hit in hits})
            total += len(truth)
    assert found / total >= 0.95, f"recall@{TOP_K} {found / total:.3f}"


async def test_the_terms_index_is_mapped_from_its_files_not_loaded(tmp_path) -> None:
    """The lexical side's payload index of term ids, the largest index, is read through
    the page cache: a process that opens the collection (a cold `search`) loads none of it."""
    record = make_record("d", 0, unit(random.Random(1)))
    record.terms = {3: 1.0, 7: 2.0}
    async with QdrantEdgeStore(path=str(tmp_path / "edge")) as store:
        await store.create_lexical_collection("lexical", DIMENSIONS)
        await store.insert("lexical", [record])
    async with QdrantEdgeStore(path=str(tmp_path / "edge")) as store:
        shard = await store._shard("lexical")
        index = shard.info().payload_schema[TERMS]
        assert index.params.memory == store._edge.Memory.Cached
        assert await store.term_counts("lexical", [3, 5]) == (1, {3: 1, 5: 0})
