"""A store whose server is down fails with VectorStoreError naming it, after bounded retries."""

from __future__ import annotations

import pytest

from ragflow_config import VectorStoreError
from ragflow_config.rag import QdrantStore


# qdrant-client's own compatibility check, from a thread of its own, also finds no server.
@pytest.mark.filterwarnings("ignore:Failed to obtain server version:UserWarning")
async def test_qdrant_server_down(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    async with QdrantStore(url=url, timeout=2, max_retries=1) as store:
        with pytest.raises(VectorStoreError) as failure:
            await store.has_collection("kb")
    assert failure.value.store == f"QdrantStore({url})"
    assert "gave up after 2 attempts" in failure.value.cause


async def test_milvus_server_down(closed_port: int) -> None:
    pytest.importorskip("pymilvus", reason="pymilvus is not installed (extra: milvus)")
    from ragflow_config.rag import MilvusLiteStore

    uri = f"http://127.0.0.1:{closed_port}"
    with pytest.raises(VectorStoreError) as failure:
        async with MilvusLiteStore(uri=uri, timeout=2, max_retries=1):
            pass
    assert failure.value.store == f"MilvusLiteStore({uri})"
    assert "Fail connecting" in failure.value.cause
    assert "gave up after 2 attempts" in failure.value.cause


async def test_postgres_server_down_and_the_password_stays_secret(closed_port: int) -> None:
    pytest.importorskip("psycopg", reason="psycopg is not installed (extra: pgvector)")
    from ragflow_config.credential import PostgresCredential
    from ragflow_config.rag import PgVectorStore

    dsn = f"postgresql://rag:s3cret-pw@127.0.0.1:{closed_port}/kb"
    store = PgVectorStore(credential=PostgresCredential(dsn=dsn), timeout=2, max_retries=1)
    with pytest.raises(VectorStoreError) as failure:
        async with store:
            pass
    assert failure.value.store == f"PgVectorStore(127.0.0.1:{closed_port}/kb)"
    assert "OperationalError" in failure.value.cause
    assert "gave up after 2 attempts" in failure.value.cause
    assert "s3cret-pw" not in str(failure.value)


async def test_postgres_dsn_that_cannot_be_parsed_is_not_echoed() -> None:
    pytest.importorskip("psycopg", reason="psycopg is not installed (extra: pgvector)")
    from ragflow_config.credential import PostgresCredential
    from ragflow_config.rag import PgVectorStore

    store = PgVectorStore(credential=PostgresCredential(dsn="host=x password=s3cret-pw port"))
    with pytest.raises(VectorStoreError, match="connection string is invalid") as failure:
        async with store:
            pass
    assert "s3cret-pw" not in str(failure.value)
