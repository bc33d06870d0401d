"""A live local chat/completions server, and no API keys from the developer's shell."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._server import ChatServer


@pytest.fixture
def server() -> Iterator[ChatServer]:
    instance = ChatServer()
    instance.start()
    yield instance
    instance.stop()


@pytest.fixture(autouse=True)
def _no_ambient_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
