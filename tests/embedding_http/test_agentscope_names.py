"""AgentScope's embedding model names: Ollama and Gemini models, the OpenAI alias, usage.

Ollama's and Gemini's requests are tested in test_ollama_embedding.py and
test_gemini_embedding.py, against fake servers speaking their APIs.
"""

from __future__ import annotations

import asyncio

import pytest
from pydantic import ValidationError

from ragflow_config import UnsupportedInputError
from ragflow_config.credential import (
    MissingSecretError,
    OpenAICredential,
)
from ragflow_config.embedding import (
    EmbeddingUsage,
    GeminiEmbeddingModel,
    OllamaEmbeddingModel,
    OpenAICompatibleEmbeddingModel,
    OpenAIEmbeddingModel,
)
from ragflow_config.message import DataBlock
from ragflow_config.pipeline._registry import default_registry

from ._server import EmbeddingServer

KEY = "gm-test-0123456789"


def test_gemini_without_a_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEMINI_API_KEY", raising=False)
    with pytest.raises(MissingSecretError, match="GEMINI_API_KEY"):
        GeminiEmbeddingModel(model="gemini-embedding-001", dimensions=8)


async def test_openai_name_and_usage(server: EmbeddingServer) -> None:
    assert OpenAIEmbeddingModel is OpenAICompatibleEmbeddingModel
    model = OpenAIEmbeddingModel(
        credential=OpenAICredential(api_key="k"),
        model="text-embedding-3-small",
        dimensions=8,
        base_url=server.url,
    )
    async with model:
        response = await model(["a", "b"])
    assert (response.type, response.source) == ("embedding", "api")
    assert response.id and response.created_at
    assert isinstance(response.usage, EmbeddingUsage)
    assert response.usage.type == "embedding"
    assert response.usage.time >= 0
    # AgentScope's response and usage are dicts too: code reading them by key runs.
    assert response["embeddings"] == response.embeddings
    assert response["usage"]["type"] == "embedding"
    with pytest.raises(KeyError):
        response["vectors"]
    sent = len(server.requests)
    async with model:
        nothing = await model([])
    assert (nothing.embeddings, nothing.usage) == ([], EmbeddingUsage(time=0, tokens=0))
    assert len(server.requests) == sent  # nothing to embed, nothing sent


def test_the_new_models_are_registered_types() -> None:
    registry = default_registry()
    assert registry.get("embedding", "ollama").cls is OllamaEmbeddingModel
    assert registry.get("embedding", "gemini").cls is GeminiEmbeddingModel


async def test_batch_size_is_set_as_in_agentscope(server: EmbeddingServer) -> None:
    model = OpenAIEmbeddingModel(model="m", dimensions=8, base_url=server.url, batch_size=64)
    model.batch_size = 2
    async with model:
        response = await model(["a", "b", "c"])
    assert response.embeddings == [server.vector_for(text) for text in "abc"]
    assert sorted(len(seen.body["input"]) for seen in server.requests) == [1, 2]
    with pytest.raises(ValidationError, match="batch_size"):
        model.batch_size = 0
    assert model.batch_size == 2


async def test_usage_counts_the_tokens_the_server_reports(server: EmbeddingServer) -> None:
    async with OpenAIEmbeddingModel(model="m", dimensions=8, base_url=server.url) as model:
        model.batch_size = 2
        response = await model(["one", "two words", "and three words"])
        assert len(server.requests) == 2
        assert response.usage == EmbeddingUsage(time=response.usage.time, tokens=6)
        server.report_usage = False
        unreported = await model(["one"])
    assert unreported.usage is not None and unreported.usage.tokens is None


async def test_a_batch_shared_by_calls_reports_no_tokens_to_either(
    server: EmbeddingServer,
) -> None:
    """The service counts a batch's tokens, not each input's: a call whose inputs shared a
    batch with another call's cannot know its own share."""
    options = {"batch_size": 2, "max_concurrency": 1}
    async with OpenAIEmbeddingModel(
        model="m", dimensions=8, base_url=server.url, **options
    ) as model:
        # The first call's batch runs alone; the next two calls' inputs wait, then go together.
        alone, first, second = await asyncio.gather(model(["a b"]), model(["c d e"]), model(["f"]))
    assert sorted(seen.body["input"] for seen in server.requests) == [["a b"], ["c d e", "f"]]
    assert [r.usage.tokens for r in (alone, first, second) if r.usage] == [2, None, None]


async def test_a_data_block_is_refused_with_agentscopes_value_error(
    server: EmbeddingServer,
) -> None:
    async with OpenAIEmbeddingModel(model="m", dimensions=8, base_url=server.url) as model:
        with pytest.raises(TypeError, match="text only") as refused:
            await model(["a", DataBlock.from_bytes(b"\x89PNG", "image/png")])
        with pytest.raises(ValueError, match="text only"):  # a batch alone, as AgentScope's
            await model._call_api([DataBlock.from_bytes(b"\x89PNG", "image/png")])
    assert isinstance(refused.value, UnsupportedInputError)
    assert server.requests == []
