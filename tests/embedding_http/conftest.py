"""Fixtures of the HTTP embedding tests: a live local server, and no keys from the shell."""

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


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys in the developer's shell must not change what the tests send."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
