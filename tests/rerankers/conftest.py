"""The reranker tests' live local server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._server import RerankServer


@pytest.fixture
def server() -> Iterator[RerankServer]:
    with RerankServer() as instance:
        yield instance
