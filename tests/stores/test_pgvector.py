"""PgVectorStore specifics: its indexes, identifiers, and the exact-search fallback."""

from __future__ import annotations

import random
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, urlencode

import pytest

from ragflow_config import VectorStoreError
from ragflow_config.credential import PostgresCredential
from ragflow_config.rag import PgVectorStore

from .conftest import make_record

psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (extra: pgvector)")


def open_store(dsn: str, **options: Any) -> PgVectorStore:
    return PgVectorStore(credential=PostgresCredential(dsn=dsn), **options)


@pytest.fixture
async def drop(pgvector_dsn: str) -> AsyncIterator[list[str]]:
    """Tables to drop after the test."""
    names: list[str] = []
    yield names
    async with open_store(pgvector_dsn) as store:
        for name in names:
            await store.delete_collection(name)


@pytest.mark.parametrize(
    ("distance", "opclass"),
    [("cosine", "vector_cosine_ops"), ("dot", "vector_ip_ops"), ("euclidean", "vector_l2_ops")],
)
async def test_tables_get_an_hnsw_index_for_the_metric_and_a_gin_index(
    pgvector_dsn: str, drop: list[str], distance: str, opclass: str
) -> None:
    name = f"kb_{distance}"
    drop.append(name)
    async with open_store(pgvector_dsn, distance=distance) as store:
        await store.create_collection(name, 4)

    async with await psycopg.AsyncConnection.connect(pgvector_dsn) as connection:
        cursor = await connection.execute(
            "SELECT indexdef FROM pg_indexes WHERE tablename = %s", (name,)
        )
        definitions = " | ".join(row[0] for row in await cursor.fetchall())
    assert f"USING hnsw (embedding {opclass})" in definitions
    assert "USING gin (metadata jsonb_path_ops)" in definitions


async def test_collection_names_are_identifiers_not_sql(pgvector_dsn: str, drop: list[str]) -> None:
    name = 'kb"; DROP TABLE victim; --'
    drop.extend([name, "victim"])
    async with open_store(pgvector_dsn) as store:
        await store.create_collection("victim", 2)
        await store.create_collection(name, 2)
        await store.insert(name, [make_record("doc", 0, [1.0, 0.0])])

        assert [r.document_id for r in await store.search(name, [1.0, 0.0])] == ["doc"]
        assert await store.has_collection("victim")


async def test_a_name_postgres_would_truncate_is_refused(pgvector_dsn: str) -> None:
    async with open_store(pgvector_dsn) as store:
        with pytest.raises(VectorStoreError, match="invalid collection name"):
            await store.create_collection("k" * 64, 2)


# Both plans force the HNSW index, which filters after its scan.
HNSW_ONLY = "-c enable_seqscan=off -c enable_bitmapscan=off"


@pytest.mark.parametrize(
    "parameters",
    [
        pytest.param({}, id="iterative-scan"),
        # One index entry at most: the iterative scan stops almost at once.
        pytest.param({"max_scan_tuples": 1}, id="exact-fallback"),
    ],
)
async def test_a_filtered_search_through_the_index_still_finds_top_k(
    pgvector_dsn: str, drop: list[str], parameters: dict[str, Any]
) -> None:
    dsn = f"{pgvector_dsn}?{urlencode({'options': HNSW_ONLY}, quote_via=quote)}"
    name = "kb_post_filter"
    drop.append(name)
    rng = random.Random(2)
    hay = [
        make_record("hay", i, [1.0, rng.uniform(0, 0.1), rng.uniform(0, 0.1)], {"t": "hay"})
        for i in range(300)
    ]
    needles = [make_record(f"needle-{i}", 0, [-1.0, 0.1 * i, 0.0], {"t": "n"}) for i in range(5)]
    async with open_store(dsn, **parameters) as store:
        await store.create_collection(name, 3)
        await store.insert(name, hay + needles)

        # A plain index scan finds none of them: the nearest 40 are all hay.
        async with await psycopg.AsyncConnection.connect(dsn) as connection:
            cursor = await connection.execute(
                'SELECT document_id FROM kb_post_filter WHERE metadata @> \'{"t": "n"}\''
                " ORDER BY embedding <=> '[1,0,0]' LIMIT 5"
            )
            assert await cursor.fetchall() == []

        results = await store.search(name, [1.0, 0.0, 0.0], top_k=5, metadata_filter={"t": "n"})

    assert sorted(r.document_id for r in results) == [f"needle-{i}" for i in range(5)]
    scores = [r.score for r in results]
    assert scores == sorted(scores, reverse=True)


async def test_a_dropped_connection_is_reopened(pgvector_dsn: str, drop: list[str]) -> None:
    name = "kb_reconnect"
    drop.append(name)
    async with open_store(pgvector_dsn) as store:
        await store.create_collection(name, 2)
        await store.insert(name, [make_record("doc", 0, [1.0, 0.0])])
        async with await psycopg.AsyncConnection.connect(pgvector_dsn) as admin:
            cursor = await admin.execute(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = 'ragflow-config'"
            )
            assert await cursor.fetchone() == (1,)

        assert [r.document_id for r in await store.search(name, [1.0, 0.0])] == ["doc"]


async def test_a_table_from_before_scoped_keys_is_migrated_on_first_write(
    pgvector_dsn: str, drop: list[str]
) -> None:
    from ragflow_config._document import scope_key

    drop.append("kb_unscoped_key")
    async with await psycopg.AsyncConnection.connect(pgvector_dsn, autocommit=True) as connection:
        await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
        await connection.execute(
            "CREATE TABLE kb_unscoped_key (document_id text NOT NULL,"
            " chunk_index integer NOT NULL, embedding vector(2) NOT NULL,"
            " chunk jsonb NOT NULL, metadata jsonb NOT NULL,"
            " PRIMARY KEY (document_id, chunk_index))"
        )
    old = make_record("doc", 0, [1.0, 0.0], {"tenant": "a"})
    async with open_store(pgvector_dsn) as store:
        await store.insert("kb_unscoped_key", [old])
        scoped = make_record("doc", 0, [0.0, 1.0], {"tenant": "b"})
        await store.insert(
            "kb_unscoped_key", [scoped.model_copy(update={"scope": scope_key({"tenant": "b"})})]
        )
        tenants = {
            tenant: [
                (s.document_id, s.chunk_count)
                for s in await store.list_documents("kb_unscoped_key", {"tenant": tenant})
            ]
            for tenant in ("a", "b")
        }
    assert tenants == {"a": [("doc", 1)], "b": [("doc", 1)]}
