"""The HTTP embedding tests' live local server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._server import EmbeddingServer


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    instance = EmbeddingServer()
    instance.start()
    yield instance
    instance.stop()
