"""The HTTP embedding tests' OpenAI-compatible server, under the short name they use."""

from __future__ import annotations

import pytest

from ._server import EmbeddingServer


@pytest.fixture
def server(embedding_server: EmbeddingServer) -> EmbeddingServer:
    return embedding_server
