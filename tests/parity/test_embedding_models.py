"""The embedding models against AgentScope 2.0.11's, on the same local servers: the same
requests on the wire, the same vectors back, the same token counts."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")

import agentscope.credential as their_credentials
import agentscope.embedding as theirs
import agentscope.message as their_messages
from _ollama_fake import OllamaServer
from embedding_http._dashscope_server import DashScopeServer
from embedding_http._gemini_server import GeminiServer
from embedding_http._server import EmbeddingServer

import ragflow_config.credential as our_credentials
import ragflow_config.embedding as ours
import ragflow_config.message as our_messages

KEY = "sk-parity-0123456789"
TEXTS = [f"passage number {i} about parity" for i in range(13)]


def wire(requests: list[Any]) -> list[tuple[str, Any]]:
    """What was sent, in a comparable order: path and body of each request."""
    return sorted(((seen.path, seen.body) for seen in requests), key=repr)


async def assert_same(
    server: Any,
    theirs_embed: Any,
    our_model: Any,
    our_inputs: list[Any],
    *,
    tokens_reported: bool = True,
) -> int:
    """Run AgentScope's call, then ours on the same server: the same requests, vectors and
    tokens. Returns how many requests each sent.

    Where the service reports no tokens (``tokens_reported=False``), AgentScope's model
    says 0 and ours ``None`` (unknown), as the README table says."""
    their_response = await theirs_embed()
    their_wire = wire(server.requests)
    server.requests.clear()
    async with our_model:
        our_response = await our_model(our_inputs)
    assert wire(server.requests) == their_wire
    assert our_response.embeddings == their_response.embeddings
    assert our_response.usage is not None and their_response.usage is not None
    if tokens_reported:
        assert our_response.usage.tokens == their_response.usage.tokens
    else:
        assert (our_response.usage.tokens, their_response.usage.tokens) == (None, 0)
    return len(their_wire)


def image_blocks(module: Any) -> list[Any]:
    return [
        module.DataBlock(source=module.Base64Source(data=f"aW1n{i}", media_type="image/png"))
        for i in range(7)
    ] + [
        module.DataBlock(
            source=module.URLSource(url="https://example.com/v.mp4", media_type="video/mp4")
        )
    ]


async def test_openai(embedding_server: EmbeddingServer) -> None:
    their_model = theirs.OpenAIEmbeddingModel(
        credential=their_credentials.OpenAICredential(api_key=KEY, base_url=embedding_server.url),
        model="text-embedding-3-small",
        dimensions=8,
    )

    async def their_call() -> Any:
        try:
            return await their_model(TEXTS)
        finally:
            await their_model.client.close()

    our_model = ours.OpenAIEmbeddingModel(
        credential=our_credentials.OpenAICredential(api_key=KEY),
        model="text-embedding-3-small",
        dimensions=8,
        base_url=embedding_server.url,
        batch_size=2048,  # AgentScope's fixed batch size for OpenAI
    )
    assert await assert_same(embedding_server, their_call, our_model, TEXTS) == 1


@pytest.fixture
def dashscope_root(dashscope_server: DashScopeServer, monkeypatch: pytest.MonkeyPatch) -> str:
    import dashscope

    # AgentScope's model takes the SDK's default root; ours is given it.
    monkeypatch.setattr(dashscope, "base_http_api_url", dashscope_server.url)
    # AgentScope's model reads the vectors in the order listed, not by their index
    # (README table): DashScope lists them in order, so the server does here.
    dashscope_server.shuffle = False
    return dashscope_server.url


def dashscope_models(model: str, root: str) -> tuple[Any, Any]:
    their_model = theirs.DashScopeEmbeddingModel(
        credential=their_credentials.DashScopeCredential(api_key=KEY), model=model, dimensions=8
    )
    our_model = ours.DashScopeEmbeddingModel(
        credential=our_credentials.DashScopeCredential(api_key=KEY),
        model=model,
        dimensions=8,
        base_url=root,
    )
    return their_model, our_model


async def test_dashscope_text(dashscope_server: DashScopeServer, dashscope_root: str) -> None:
    their_model, our_model = dashscope_models("text-embedding-v4", dashscope_root)
    sent = await assert_same(dashscope_server, lambda: their_model(TEXTS), our_model, TEXTS)
    assert sent == 2  # batches of 10, in both


async def test_dashscope_multimodal(dashscope_server: DashScopeServer, dashscope_root: str) -> None:
    their_model, our_model = dashscope_models("qwen3-vl-embedding", dashscope_root)
    sent = await assert_same(
        dashscope_server,
        lambda: their_model(["a caption", *image_blocks(their_messages)]),
        our_model,
        ["a caption", *image_blocks(our_messages)],
    )
    assert sent == 2  # 5 images at most per request, in both


def media_blocks(module: Any) -> list[Any]:
    """Gemini's inline media: more images than one request takes, a video, audio and a PDF."""
    media_types = [*["image/png"] * 7, "video/mp4", "audio/mpeg", "application/pdf"]
    return [
        module.DataBlock(source=module.Base64Source(data=f"bWVkaWE{i}", media_type=media_type))
        for i, media_type in enumerate(media_types)
    ]


def gemini_models(
    model: str, server: GeminiServer, monkeypatch: pytest.MonkeyPatch
) -> tuple[Any, Any]:
    # AgentScope's model takes the SDK's default root, which this variable sets.
    monkeypatch.setenv("GOOGLE_GEMINI_BASE_URL", server.url)
    their_model = theirs.GeminiEmbeddingModel(
        credential=their_credentials.GeminiCredential(api_key=KEY), model=model, dimensions=8
    )
    our_model = ours.GeminiEmbeddingModel(
        credential=our_credentials.GeminiCredential(api_key=KEY),
        model=model,
        dimensions=8,
        base_url=server.url,
    )
    return their_model, our_model


async def test_gemini_text(gemini_server: GeminiServer, monkeypatch: pytest.MonkeyPatch) -> None:
    their_model, our_model = gemini_models("gemini-embedding-001", gemini_server, monkeypatch)
    texts = [f"passage {i}" for i in range(150)]
    sent = await assert_same(
        gemini_server, lambda: their_model(texts), our_model, texts, tokens_reported=False
    )
    assert sent == 2  # batches of 100, in both


async def test_gemini_multimodal(
    gemini_server: GeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    their_model, our_model = gemini_models("gemini-embedding-2", gemini_server, monkeypatch)
    sent = await assert_same(
        gemini_server,
        lambda: their_model(["a caption", *media_blocks(their_messages)]),
        our_model,
        ["a caption", *media_blocks(our_messages)],
        tokens_reported=False,
    )
    assert sent == 2  # 6 images at most per request, in both


async def test_ollama(ollama_server: OllamaServer) -> None:
    their_model = theirs.OllamaEmbeddingModel(
        credential=their_credentials.OllamaCredential(host=ollama_server.host),
        model="nomic-embed-text",
        dimensions=8,
    )
    # AgentScope always sends `dimensions`; ours only when told (README table).
    our_model = ours.OllamaEmbeddingModel(
        credential=our_credentials.OllamaCredential(host=ollama_server.host),
        model="nomic-embed-text",
        dimensions=8,
        send_dimensions=True,
    )
    await assert_same(ollama_server, lambda: their_model(TEXTS), our_model, TEXTS)
