"""PgVectorStore's approximate (HNSW) search returns what an exact search returns.

The table is 2,000 paragraphs of the sample corpus under the lexical hashing
model: sparse, uneven vectors on which pgvector's HNSW defaults (ef_search 40,
an iterative scan cut off at top_k) miss some queries' best hits entirely.
The exact answer is computed here, in Python, from the same vectors.
"""

from __future__ import annotations

import random
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from ragflow_config.credential import PostgresCredential
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.rag import PgVectorStore

from .conftest import make_record

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (extra: pgvector)")

CORPUS = Path(__file__).resolve().parents[2] / "pipelines" / "corpus"
TABLE = "kb_recall"
ROWS = 2_000
TOP_K = 3
QUERIES = 200
# A shelf holding 1 % of the rows: the selective filter.
SHELF = {"shelf": "a"}
# Plans that can only go through the HNSW index (which filters after its
# scan): what the planner picks on a table too large to sort. Left to itself
# on this small table, it may sort every row, depending on its statistics.
HNSW_ONLY = "-c enable_seqscan=off -c enable_bitmapscan=off"


@dataclass
class Corpus:
    texts: list[str]
    vectors: list[list[float]]
    on_shelf: list[bool]

    def exact_scores(self, query: list[float], shelf_only: bool) -> list[float]:
        scores = [
            sum(q * v for q, v in zip(query, vector, strict=True))
            for vector, on_shelf in zip(self.vectors, self.on_shelf, strict=True)
            if on_shelf or not shelf_only
        ]
        return sorted(scores, reverse=True)[:TOP_K]


def paragraphs() -> list[str]:
    texts = []
    for path in sorted(CORPUS.rglob("*")):
        if path.suffix in {".md", ".rst", ".txt"}:
            texts += [p for p in re.split(r"\n\s*\n", path.read_text("utf-8")) if len(p) > 80]
    return texts[:ROWS]


@pytest.fixture
async def corpus(pgvector_dsn: str) -> AsyncIterator[Corpus]:
    model = HashingEmbeddingModel(dimensions=128)
    texts = paragraphs()
    assert len(texts) == ROWS
    # Unit vectors: the cosine score is the dot product.
    loaded = Corpus(
        texts, [model.embed_text(t) for t in texts], [i % 100 == 7 for i in range(ROWS)]
    )
    records = [
        make_record(f"p{i}", 0, vector, SHELF if on_shelf else {"shelf": "b"})
        for i, (vector, on_shelf) in enumerate(zip(loaded.vectors, loaded.on_shelf, strict=True))
    ]
    async with open_store(pgvector_dsn) as store:
        await store.create_collection(TABLE, 128)
        await store.insert(TABLE, records)
    yield loaded
    async with open_store(pgvector_dsn) as store:
        await store.delete_collection(TABLE)


def with_options(dsn: str, options: str) -> str:
    return f"{dsn}?{urlencode({'options': options}, quote_via=quote)}"


def open_store(dsn: str, **parameters: Any) -> PgVectorStore:
    return PgVectorStore(credential=PostgresCredential(dsn=dsn), **parameters)


def queries(corpus: Corpus, shelf_only: bool) -> list[list[float]]:
    """Eight consecutive words of a paragraph (of the shelf's, for a filtered search)."""
    rng = random.Random(1)
    model = HashingEmbeddingModel(dimensions=128)
    pool = [t for t, on in zip(corpus.texts, corpus.on_shelf, strict=True) if on or not shelf_only]
    result = []
    for _ in range(QUERIES):
        words = rng.choice(pool).split()
        start = rng.randrange(max(1, len(words) - 8))
        result.append(model.embed_text(" ".join(words[start : start + 8])))
    return result


async def plan(dsn: str, query: list[float], where: str, candidates: int) -> str:
    """EXPLAIN ANALYZE of the store's search statement, under its default settings."""
    async with await psycopg.AsyncConnection.connect(dsn) as connection:
        for setting in ["hnsw.ef_search = 200", "hnsw.iterative_scan = relaxed_order"]:
            await connection.execute(f"SET {setting}")
        cursor = await connection.execute(
            "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF, BUFFERS OFF)"
            " WITH candidates AS MATERIALIZED ("
            " SELECT document_id, chunk, embedding <=> %(query)s::vector AS distance"
            f" FROM {TABLE} WHERE {where} ORDER BY distance LIMIT %(candidates)s)"
            " SELECT document_id, chunk, (1 - distance)::float8 FROM candidates"
            " ORDER BY distance + 0 LIMIT %(top_k)s",
            {"query": str(query).replace(" ", ""), "candidates": candidates, "top_k": TOP_K},
        )
        return "\n".join(row[0] for row in await cursor.fetchall())


async def misses(store: PgVectorStore, corpus: Corpus, shelf_only: bool) -> int:
    """How many queries' top-k scores differ from the exact top-k scores."""
    missed = 0
    for query in queries(corpus, shelf_only):
        results = await store.search(
            TABLE, query, top_k=TOP_K, metadata_filter=SHELF if shelf_only else None
        )
        expected = corpus.exact_scores(query, shelf_only)
        if [r.score for r in results] != pytest.approx(expected, abs=1e-5):
            missed += 1
    return missed


async def test_an_unfiltered_search_finds_the_exact_top_k(
    pgvector_dsn: str, corpus: Corpus
) -> None:
    dsn = with_options(pgvector_dsn, HNSW_ONLY)
    query = queries(corpus, shelf_only=False)[0]
    assert f"Index Scan using {TABLE}_embedding_idx" in await plan(dsn, query, "TRUE", TOP_K)

    async with open_store(dsn) as store:
        assert await misses(store, corpus, shelf_only=False) == 0


async def test_a_selective_filter_through_the_index_finds_the_exact_top_k(
    pgvector_dsn: str, corpus: Corpus
) -> None:
    dsn = with_options(pgvector_dsn, HNSW_ONLY)
    query = queries(corpus, shelf_only=True)[0]
    explained = await plan(dsn, query, 'metadata @> \'{"shelf": "a"}\'', 200)
    assert f"Index Scan using {TABLE}_embedding_idx" in explained
    assert "Rows Removed by Filter" in explained

    async with open_store(dsn) as store:
        assert await misses(store, corpus, shelf_only=True) == 0


async def test_exact_search_skips_the_index(pgvector_dsn: str, corpus: Corpus) -> None:
    # ef_search 1 through the index would miss most best hits.
    dsn = with_options(pgvector_dsn, HNSW_ONLY)
    async with open_store(dsn, ef_search=1, exact=True) as store:
        assert await misses(store, corpus, shelf_only=False) == 0
