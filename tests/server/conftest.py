"""Fixtures for `ragflow-config serve`: an indexed corpus of two tenants, and real server processes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from ._serving import ServerProcess, index, write_pipeline

pytest.importorskip("mcp", reason="the serve extra is not installed (pip install -e .[serve])")


@pytest.fixture
async def indexed(tmp_path: Path) -> Path:
    """The two-tenant corpus indexed on Qdrant local (hashing model), with an agentic middleware."""
    file = write_pipeline(tmp_path)
    await index(file)
    return file


@pytest.fixture
def server_process() -> Iterator[type[ServerProcess]]:
    """Start servers with ``server_process(args...)``; every one is killed at the end."""
    started: list[ServerProcess] = []

    class Tracked(ServerProcess):
        def __init__(
            self, *args: str, env: dict[str, str] | None = None, open_files: int | None = None
        ) -> None:
            super().__init__(*args, env=env, open_files=open_files)
            started.append(self)

    yield Tracked
    for server in started:
        server.__exit__(None, None, None)
