"""The embedding models against AgentScope 2.0.11's, on the same local servers: the same
requests on the wire, the same vectors back, the same token counts."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")

import agentscope.credential as their_credentials
import agentscope.embedding as theirs
import agentscope.message as their_messages
from _ollama_fake import OllamaServer
from embedding_http._dashscope_server import DashScopeServer
from embedding_http._server import EmbeddingServer

import ragflow_config.credential as our_credentials
import ragflow_config.embedding as ours
import ragflow_config.message as our_messages

KEY = "sk-parity-0123456789"
TEXTS = [f"passage number {i} about parity" for i in range(13)]


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


@pytest.fixture
def ollama_server() -> Iterator[OllamaServer]:
    instance = OllamaServer()
    instance.start()
    yield instance
    instance.stop()


def wire(requests: list[Any]) -> list[tuple[str, Any]]:
    """What was sent, in a comparable order: path and body of each request."""
    return sorted(((seen.path, seen.body) for seen in requests), key=repr)


def image_blocks(module: Any) -> list[Any]:
    return [
        module.DataBlock(source=module.Base64Source(data=f"aW1n{i}", media_type="image/png"))
        for i in range(7)
    ] + [
        module.DataBlock(
            source=module.URLSource(url="https://example.com/v.mp4", media_type="video/mp4")
        )
    ]


async def test_openai(server: EmbeddingServer) -> None:
    their_model = theirs.OpenAIEmbeddingModel(
        credential=their_credentials.OpenAICredential(api_key=KEY, base_url=server.url),
        model="text-embedding-3-small",
        dimensions=8,
    )
    their_response = await their_model(TEXTS)
    await their_model.client.close()
    their_wire = wire(server.requests)
    server.requests.clear()

    our_model = ours.OpenAIEmbeddingModel(
        credential=our_credentials.OpenAICredential(api_key=KEY),
        model="text-embedding-3-small",
        dimensions=8,
        base_url=server.url,
        batch_size=2048,  # AgentScope's fixed batch size for OpenAI
    )
    async with our_model:
        our_response = await our_model(TEXTS)

    assert wire(server.requests) == their_wire
    assert our_response.embeddings == their_response.embeddings
    assert our_response.usage is not None and their_response.usage is not None
    assert our_response.usage.tokens == their_response.usage.tokens


async def test_dashscope_text(
    dashscope_server: DashScopeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dashscope

    # AgentScope's model takes the SDK's default root; ours is given it.
    monkeypatch.setattr(dashscope, "base_http_api_url", dashscope_server.url)
    # AgentScope's model reads the vectors in the order listed, not by their index
    # (README table): DashScope lists them in order, so the server does here.
    dashscope_server.shuffle = False
    their_model = theirs.DashScopeEmbeddingModel(
        credential=their_credentials.DashScopeCredential(api_key=KEY),
        model="text-embedding-v4",
        dimensions=8,
    )
    their_response = await their_model(TEXTS)
    their_wire = wire(dashscope_server.requests)
    dashscope_server.requests.clear()

    our_model = ours.DashScopeEmbeddingModel(
        credential=our_credentials.DashScopeCredential(api_key=KEY),
        model="text-embedding-v4",
        dimensions=8,
        base_url=dashscope_server.url,
    )
    async with our_model:
        our_response = await our_model(TEXTS)

    assert len(their_wire) == 2  # batches of 10, in both
    assert wire(dashscope_server.requests) == their_wire
    assert our_response.embeddings == their_response.embeddings
    assert our_response.usage is not None and their_response.usage is not None
    assert our_response.usage.tokens == their_response.usage.tokens


async def test_dashscope_multimodal(
    dashscope_server: DashScopeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    import dashscope

    monkeypatch.setattr(dashscope, "base_http_api_url", dashscope_server.url)
    dashscope_server.shuffle = False  # as above
    their_model = theirs.DashScopeEmbeddingModel(
        credential=their_credentials.DashScopeCredential(api_key=KEY),
        model="qwen3-vl-embedding",
        dimensions=8,
    )
    their_response = await their_model(["a caption", *image_blocks(their_messages)])
    their_wire = wire(dashscope_server.requests)
    dashscope_server.requests.clear()

    our_model = ours.DashScopeEmbeddingModel(
        credential=our_credentials.DashScopeCredential(api_key=KEY),
        model="qwen3-vl-embedding",
        dimensions=8,
        base_url=dashscope_server.url,
    )
    async with our_model:
        our_response = await our_model(["a caption", *image_blocks(our_messages)])

    assert len(their_wire) == 2  # 5 images at most per request, in both
    assert wire(dashscope_server.requests) == their_wire
    assert our_response.embeddings == their_response.embeddings
    assert our_response.usage is not None and their_response.usage is not None
    assert our_response.usage.tokens == their_response.usage.tokens


async def test_ollama(ollama_server: OllamaServer) -> None:
    their_model = theirs.OllamaEmbeddingModel(
        credential=their_credentials.OllamaCredential(host=ollama_server.host),
        model="nomic-embed-text",
        dimensions=8,
    )
    their_response = await their_model(TEXTS)
    their_wire = wire(ollama_server.requests)
    ollama_server.requests.clear()

    credential = our_credentials.OllamaCredential(host=ollama_server.host)
    # AgentScope always sends `dimensions`; ours only when told (README table).
    our_model = ours.OllamaEmbeddingModel(
        credential=credential, model="nomic-embed-text", dimensions=8, send_dimensions=True
    )
    async with our_model:
        our_response = await our_model(TEXTS)

    assert wire(ollama_server.requests) == their_wire
    assert our_response.embeddings == their_response.embeddings
    assert our_response.usage is not None and their_response.usage is not None
    assert our_response.usage.tokens == their_response.usage.tokens
