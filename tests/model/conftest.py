"""A live local chat/completions server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._server import ChatServer


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with ChatServer() as instance:
        yield instance
