"""Real Qdrant stores in local mode, in memory and on disk, for the core suite."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from ragflow_config.rag import QdrantStore


@pytest.fixture(params=["memory", "disk"])
def store_options(request: pytest.FixtureRequest, tmp_path: Path) -> dict[str, Any]:
    """How to open a local Qdrant store: in memory, or in a directory on disk."""
    if request.param == "memory":
        return {"location": ":memory:"}
    return {"path": str(tmp_path / "qdrant")}


@pytest.fixture
async def store(store_options: dict[str, Any]) -> AsyncIterator[QdrantStore]:
    async with QdrantStore(**store_options) as opened:
        yield opened
