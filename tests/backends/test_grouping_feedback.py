"""``group_by: document`` and pseudo-relevance feedback give the same, hand-computed results
on every store (Qdrant on disk, Milvus Lite, pgvector on embedded PostgreSQL).

The corpora are tiny and their vectors chosen (``TableModel`` maps each text to
a given vector), so every score below is worked out here by hand: cosines of
known vectors, and BM25 on chunks of two or three terms. Elasticsearch and
MongoDB, which have no server here, are tested at the wire in
tests/stores_translation/test_grouping_feedback.py: the requests each sends
(chunks per document, the feedback round's query and its filter) and the
hits the knowledge base makes of scripted answers.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from _table_model import TableModel

from ragflow_config.message import TextBlock
from ragflow_config.rag import (
    Chunk,
    KnowledgeBase,
    QdrantStore,
    RetrievalSettings,
    VectorSearchResult,
    VectorStoreBase,
)
from ragflow_config.rag._retrieval import Rm3Settings, rm3_terms


def slanted(cosine: float) -> list[float]:
    """A unit vector at ``cosine`` to the query vector [1, 0, 0]."""
    return [cosine, math.sqrt(1 - cosine * cosine), 0.0]


QUERY = "aspirin fever"
# document -> its chunks (text, vector); the query's vector is [1, 0, 0].
GROUPED = {
    "A": [("aspirin tablets", slanted(0.9)), ("aspirin fever fever", slanted(0.8))],
    "B": [("fever in adults", slanted(0.95))],
    "C": [
        ("aspirin headache", slanted(0.5)),
        ("children dose", slanted(0.4)),
        ("sunny coast walk", slanted(0.3)),
    ],
    "D": [("weather forecast today", [0.0, 0.0, 1.0])],
}
# Rocchio's corpus, one chunk a document, searched with the query "r".
ROCCHIO = {
    "X": [("xylophone", [0.8, 0.6, 0.0])],
    "Y": [("yacht", [0.28, 0.96, 0.0])],
    "Z": [("zebra", [0.6, -0.8, 0.0])],
    "W": [("walrus", [0.0, 0.0, 1.0])],
}
# RM3's corpus: equal lengths, so every BM25 weight below is one number.
RM3 = {
    "d1": [("aspirin fever relief", [1.0, 0.0, 0.0])],
    "d2": [("aspirin fever dose", [1.0, 0.0, 0.0])],
    "d3": [("relief dose tablets", [1.0, 0.0, 0.0])],
    "d4": [("rainy forecast tomorrow", [1.0, 0.0, 0.0])],
}
VECTORS = {
    text: vector
    for corpus in (GROUPED, ROCCHIO, RM3)
    for chunks in corpus.values()
    for text, vector in chunks
} | {QUERY: [1.0, 0.0, 0.0], "r": [1.0, 0.0, 0.0]}


STORES = ["qdrant", "milvus_lite", "pgvector"]


@pytest.fixture(params=STORES)
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[VectorStoreBase]:
    opened: VectorStoreBase
    if request.param == "qdrant":
        opened = QdrantStore(path=str(tmp_path / "qdrant"))
    elif request.param == "milvus_lite":
        from ragflow_config.rag import MilvusLiteStore

        opened = MilvusLiteStore(uri=str(tmp_path / "milvus.db"))
    else:
        from ragflow_config.credential import PostgresCredential
        from ragflow_config.rag import PgVectorStore

        dsn = request.getfixturevalue("pgvector_dsn")
        opened = PgVectorStore(credential=PostgresCredential(dsn=dsn))
    async with opened:
        yield opened


Corpus = dict[str, list[tuple[str, list[float]]]]


async def indexed(store: VectorStoreBase, corpus: Corpus) -> str:
    """A new collection with a lexical side holding ``corpus``; its name."""
    collection = f"g_{uuid.uuid4().hex[:12]}"
    kb = knowledge_base(store, collection, mode="hybrid")
    for document_id, chunks in corpus.items():
        await kb.insert_document(
            [
                Chunk(
                    content=TextBlock(text=text),
                    source=f"{document_id}.txt",
                    chunk_index=i,
                    total_chunks=len(chunks),
                )
                for i, (text, _) in enumerate(chunks)
            ],
            document_id=document_id,
        )
    return collection


def knowledge_base(store: VectorStoreBase, collection: str, **retrieval: Any) -> KnowledgeBase:
    return KnowledgeBase(
        name="kb",
        description="",
        embedding_model=TableModel(VECTORS),
        vector_store=store,
        collection=collection,
        retrieval=RetrievalSettings.model_validate(retrieval),
    )


def ranked(hits: list[VectorSearchResult]) -> list[tuple[str, int]]:
    return [(hit.document_id, hit.chunk.chunk_index) for hit in hits]


def scored(hits: list[VectorSearchResult]) -> list[float]:
    return [hit.score for hit in hits]


def approx(values: list[float]) -> Any:
    return pytest.approx(values, abs=1e-5)  # stores keep vectors as float32


async def test_document_grouping_on_the_dense_side(store: VectorStoreBase) -> None:
    collection = await indexed(store, GROUPED)
    try:
        chunks = await knowledge_base(store, collection).search([QUERY], top_k=4)
        assert ranked(chunks) == [("B", 0), ("A", 0), ("A", 1), ("C", 0)]

        by_max = knowledge_base(store, collection, group_by="document")
        hits = await by_max.search([QUERY], top_k=4, explain=True)
        # One hit per document, carrying its best chunk, scored by it.
        assert ranked(hits) == [("B", 0), ("A", 0), ("C", 0), ("D", 0)]
        assert scored(hits) == approx([0.95, 0.9, 0.5, 0.0])
        chunks_of_a = hits[1].explain.dense.chunks  # type: ignore[union-attr]
        assert [c.chunk_index for c in chunks_of_a] == [0, 1]
        assert [c.score for c in chunks_of_a] == approx([0.9, 0.8])
        assert [c.chunk_index for c in hits[2].explain.dense.chunks] == [0, 1, 2]  # type: ignore[union-attr]
        assert (
            hits[1].explain.summary().startswith("dense #2 (0.9000) chunks 0 (0.9000), 1 (0.8000)")
        )

        # sum_top_2: A's two passages (0.9 + 0.8) beat B's one (0.95); C's 0.5 + 0.4.
        by_sum = knowledge_base(store, collection, group_by="document", aggregate="sum_top_2")
        hits = await by_sum.search([QUERY], top_k=4)
        assert ranked(hits) == [("A", 0), ("B", 0), ("C", 0), ("D", 0)]
        assert scored(hits) == approx([1.7, 0.95, 0.9, 0.0])

        # A side wanting 3 documents fetches 3 x chunks_per_document chunks: with 1,
        # the 3 best chunks (B0, A0, A1) hold only 2 documents.
        few = knowledge_base(store, collection, group_by="document", chunks_per_document=1)
        assert ranked(await few.search([QUERY], top_k=3)) == [("B", 0), ("A", 0)]
        assert ranked(await by_max.search([QUERY], top_k=3)) == [("B", 0), ("A", 0), ("C", 0)]
    finally:
        await store.delete_collection(collection)


def bm25_weight(length: int, tf: int = 1) -> float:
    """BM25's document-side weight at the defaults (k1 1.2, b 0.75, avg_length 100)."""
    return tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * length / 100))


def lucene_idf(total: int, holding: int) -> float:
    return math.log(1 + (total - holding + 0.5) / (holding + 0.5))


async def test_document_grouping_on_both_sides_before_fusion(store: VectorStoreBase) -> None:
    collection = await indexed(store, GROUPED)
    try:
        lexical = knowledge_base(store, collection, mode="lexical", group_by="document")
        hits = await lexical.search([QUERY], top_k=5, explain=True)
        # 7 chunks; aspirin in 3 (A0, A1, C0), fever in 2 (A1, B0).
        aspirin, fever = lucene_idf(7, 3), lucene_idf(7, 2)
        a1 = aspirin * bm25_weight(3) + fever * bm25_weight(3, tf=2)
        a0 = aspirin * bm25_weight(2)
        b0 = fever * bm25_weight(2)
        # A's best lexical chunk is A1 (its best dense one is A0); C0 ties A0, C after A.
        assert ranked(hits) == [("A", 1), ("B", 0), ("C", 0)]
        assert scored(hits) == approx([a1, b0, a0])
        chunks_of_a = hits[0].explain.lexical.chunks  # type: ignore[union-attr]
        assert [(c.chunk_index, c.score) for c in chunks_of_a] == [
            (1, pytest.approx(a1, abs=1e-5)),
            (0, pytest.approx(a0, abs=1e-5)),
        ]

        rrf = {"method": "rrf"}  # ranks alone: the expected scores follow from them
        hybrid = knowledge_base(store, collection, mode="hybrid", group_by="document", fusion=rrf)
        hits = await hybrid.search([QUERY], top_k=5, explain=True)
        # RRF over documents: dense B, A, C, D; lexical A, B, C. A is one hit, not two.
        assert ranked(hits) == [("A", 0), ("B", 0), ("C", 0), ("D", 0)]
        assert scored(hits) == approx([1 / 62 + 1 / 61, 1 / 61 + 1 / 62, 2 / 63, 1 / 64])
        explain = hits[0].explain
        assert (explain.dense.rank, explain.lexical.rank) == (2, 1)  # type: ignore[union-attr]
    finally:
        await store.delete_collection(collection)


def cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))


async def test_rocchio_adds_the_mean_of_the_first_hits_vectors(store: VectorStoreBase) -> None:
    collection = await indexed(store, ROCCHIO)
    try:
        plain = knowledge_base(store, collection)
        hits = await plain.search(["r"], top_k=4)
        assert ranked(hits) == [("X", 0), ("Z", 0), ("Y", 0), ("W", 0)]
        assert scored(hits) == approx([0.8, 0.6, 0.28, 0.0])

        # fb_docs 1, weight 1: the query becomes [1, 0, 0] + X = [1.8, 0.6, 0], which
        # lifts Y (0.28 -> 0.5692) above Z (0.6 -> 0.3162).
        rocchio = {"rm3": None, "rocchio": {"fb_docs": 1, "weight": 1.0}}
        fed = knowledge_base(store, collection, feedback=rocchio)
        hits = await fed.search(["r"], top_k=4)
        moved = [1.8, 0.6, 0.0]
        assert ranked(hits) == [("X", 0), ("Y", 0), ("Z", 0), ("W", 0)]
        vectors = {d: chunks[0][1] for d, chunks in ROCCHIO.items()}
        assert scored(hits) == approx([cosine(vectors[d], moved) for d in "XYZW"])

        # fb_docs 2, weight 0.5: [1, 0, 0] + 0.5 x mean(X, Z) = [1.35, -0.05, 0].
        two = {"rm3": None, "rocchio": {"fb_docs": 2, "weight": 0.5}}
        hits = await knowledge_base(store, collection, feedback=two).search(["r"], top_k=4)
        moved = [1.35, -0.05, 0.0]
        expected = sorted(vectors, key=lambda d: -cosine(vectors[d], moved))
        assert [d for d, _ in ranked(hits)] == expected == ["X", "Z", "Y", "W"]
        assert scored(hits) == approx([cosine(vectors[d], moved) for d in expected])
    finally:
        await store.delete_collection(collection)


def test_rm3_terms_by_hand() -> None:
    # Relevance model: aspirin 2 x 1/3, fever 2 x 1/3 + 1 x 1/2, child 2 x 1/3, adult 1/2.
    # Keep 2: fever (7/6), then aspirin before child (tie, alphabetical); mass 11/6.
    # Mixed half and half with the query (aspirin 1/2, fever 1/2).
    expanded = rm3_terms(
        ["aspirin", "fever"],
        [(["aspirin", "fever", "child"], 2.0), (["fever", "adult"], 1.0)],
        Rm3Settings(fb_docs=2, fb_terms=2, original_weight=0.5),
    )
    assert expanded == pytest.approx({"fever": 25 / 44, "aspirin": 19 / 44})


async def test_rm3_expands_the_lexical_query(store: VectorStoreBase) -> None:
    collection = await indexed(store, RM3)
    try:
        # 4 chunks of 3 terms; aspirin, fever, relief and dose each in 2: one IDF, ln 2,
        # one document weight. L is a chunk's BM25 for one query term of weight 1.
        unit = math.log(2) * bm25_weight(3)
        plain = knowledge_base(store, collection, mode="lexical")
        hits = await plain.search(["aspirin fever"], top_k=4)
        assert ranked(hits) == [("d1", 0), ("d2", 0)]  # equal scores: by document id
        assert scored(hits) == approx([2 * unit, 2 * unit])

        # Both first hits score alike, so the relevance model is aspirin 1/3, fever 1/3,
        # relief 1/6, dose 1/6; 3 terms kept: aspirin, fever, dose (before relief),
        # i.e. 2/5, 2/5, 1/5; mixed with the query (1/2, 1/2): 9/20, 9/20, 1/10.
        feedback = {"rm3": {"fb_docs": 2, "fb_terms": 3, "original_weight": 0.5}}
        fed = knowledge_base(store, collection, mode="lexical", feedback=feedback)
        hits = await fed.search(["aspirin fever"], top_k=4, explain=True)
        assert ranked(hits) == [("d2", 0), ("d1", 0), ("d3", 0)]
        assert scored(hits) == approx([unit, 0.9 * unit, 0.1 * unit])
        # d3 shares no word with the query: it is found through the expansion term.
        terms = hits[2].explain.lexical.terms  # type: ignore[union-attr]
        assert [(t.term, t.query_weight) for t in terms] == [
            ("dose", pytest.approx(0.1 * math.log(2)))
        ]

        # 4 terms kept: aspirin 5/12, fever 5/12, relief 1/12, dose 1/12.
        feedback = {"rm3": {"fb_docs": 2, "fb_terms": 4, "original_weight": 0.5}}
        fed = knowledge_base(store, collection, mode="lexical", feedback=feedback)
        hits = await fed.search(["aspirin fever"], top_k=4)
        assert ranked(hits) == [("d1", 0), ("d2", 0), ("d3", 0)]
        assert scored(hits) == approx([11 / 12 * unit, 11 / 12 * unit, 2 / 12 * unit])
    finally:
        await store.delete_collection(collection)


def test_feedback_and_grouping_are_not_part_of_the_fingerprint() -> None:
    plain = RetrievalSettings(mode="hybrid")
    varied = RetrievalSettings.model_validate(
        {"mode": "hybrid", "group_by": "document", "aggregate": "sum_top_2", "feedback": {}}
    )
    assert varied.index_settings() == plain.index_settings()
    assert plain.feedback is None  # off unless given
    assert varied.feedback is not None and varied.feedback.rm3 and varied.feedback.rocchio
