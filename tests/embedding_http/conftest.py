"""The HTTP embedding tests' live local servers: OpenAI-compatible and DashScope-native."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._dashscope_server import DashScopeServer
from ._server import EmbeddingServer


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer() as instance:
        yield instance


@pytest.fixture
def dashscope_server() -> Iterator[DashScopeServer]:
    with DashScopeServer() as instance:
        yield instance
