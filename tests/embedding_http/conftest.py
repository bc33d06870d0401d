"""The HTTP embedding tests' live local servers: OpenAI-compatible and DashScope-native."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._dashscope_server import DashScopeServer
from ._server import EmbeddingServer


@pytest.fixture
def server() -> Iterator[EmbeddingServer]:
    instance = EmbeddingServer()
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture
def dashscope_server() -> Iterator[DashScopeServer]:
    instance = DashScopeServer()
    instance.start()
    yield instance
    instance.stop()
