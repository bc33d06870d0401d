"""Fixtures: the fake servers, the stores that talk to them, and records to store."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from ragflow_config.message import TextBlock
from ragflow_config.rag import Chunk, VectorRecord
from ragflow_config.rag._stores.elasticsearch import ElasticsearchStore
from ragflow_config.rag._stores.mongodb import MongoDBStore

from .fake_elasticsearch import FakeElasticsearch
from .fake_mongod import FakeMongod


@pytest.fixture
def es_server() -> Iterator[FakeElasticsearch]:
    server = FakeElasticsearch()
    server.start()
    yield server
    server.stop()


@pytest.fixture
async def mongod() -> AsyncIterator[FakeMongod]:
    server = FakeMongod()
    await server.start()
    yield server
    await server.stop()


def es_store(server: FakeElasticsearch, **options: Any) -> ElasticsearchStore:
    return ElasticsearchStore(hosts=server.url, **options)


def mongo_store(mongod: FakeMongod, **options: Any) -> MongoDBStore:
    options.setdefault("database", "rag")
    return MongoDBStore(uri=mongod.uri, **options)


def make_record(
    document_id: str,
    chunk_index: int,
    metadata: dict[str, Any] | None = None,
    total: int = 3,
    *,
    text: str | None = None,
) -> VectorRecord:
    chunk = Chunk(
        content=TextBlock(text=f"{document_id} chunk {chunk_index}" if text is None else text),
        source=f"{document_id}.md",
        chunk_index=chunk_index,
        total_chunks=total,
        metadata=metadata or {},
    )
    return VectorRecord(vector=[0.1 * chunk_index, 0.2, 0.3], document_id=document_id, chunk=chunk)
