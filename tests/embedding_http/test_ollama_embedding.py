"""OllamaEmbeddingModel through the ``ollama`` package, against a fake Ollama server."""

from __future__ import annotations

import socket

import pytest
from _ollama_fake import OllamaServer, Reply, not_pulled

from ragflow_config import EmbeddingError
from ragflow_config.credential import OllamaCredential
from ragflow_config.embedding import EmbeddingUsage, OllamaEmbeddingModel


async def test_the_credential_host_is_where_requests_go_without_a_key(
    ollama_server: OllamaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    model = OllamaEmbeddingModel(
        credential=OllamaCredential(host=ollama_server.host), model="nomic-embed-text", dimensions=8
    )
    assert model.host == ollama_server.host
    async with model:
        response = await model(["hello", "two words"])

    vector_for = ollama_server.vector_for
    assert response.embeddings == [vector_for("hello"), vector_for("two words")]
    assert response.usage == EmbeddingUsage(time=response.usage.time, tokens=3)
    [seen] = ollama_server.requests
    assert seen.path == "/api/embed"
    assert seen.body["model"] == "nomic-embed-text"
    assert seen.body["input"] == ["hello", "two words"]
    assert "dimensions" not in seen.body  # most Ollama models have one size
    assert "authorization" not in seen.headers


async def test_base_url_names_the_server_with_or_without_v1(ollama_server: OllamaServer) -> None:
    default = OllamaEmbeddingModel(model="m", dimensions=8)
    assert default.host == "http://localhost:11434"
    for base_url in (ollama_server.host, ollama_server.url):  # the root, and the /v1 root
        async with OllamaEmbeddingModel(
            base_url=base_url, model="m", dimensions=4, send_dimensions=True
        ) as model:
            ollama_server.vector_length = 4
            await model(["x"])
    assert [seen.path for seen in ollama_server.requests] == ["/api/embed"] * 2
    assert ollama_server.requests[0].body["dimensions"] == 4


async def test_a_model_not_pulled_says_how_to_pull_it(ollama_server: OllamaServer) -> None:
    ollama_server.reply = lambda number, body: not_pulled(body["model"])
    async with OllamaEmbeddingModel(
        base_url=ollama_server.host, model="mxbai-embed-large", dimensions=8
    ) as model:
        with pytest.raises(EmbeddingError) as raised:
            await model(["x"])
    message = str(raised.value)
    assert "run `ollama pull mxbai-embed-large`" in message
    assert ollama_server.host in message
    assert len(ollama_server.requests) == 1  # a missing model is not retried


async def test_a_server_not_running_is_named() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        host = f"http://127.0.0.1:{probe.getsockname()[1]}"
    async with OllamaEmbeddingModel(base_url=host, model="m", dimensions=8, max_retries=0) as model:
        with pytest.raises(EmbeddingError, match=rf"is `ollama serve` running at {host}\?"):
            await model(["x"])


async def test_an_overloaded_server_is_retried(ollama_server: OllamaServer) -> None:
    ollama_server.reply = lambda number, body: (
        Reply(503, {"error": "server busy"}) if number == 0 else None
    )
    async with OllamaEmbeddingModel(
        base_url=ollama_server.host, model="m", dimensions=8, max_retries=1
    ) as model:
        response = await model(["x"])
    assert response.embeddings == [ollama_server.vector_for("x")]
    assert len(ollama_server.requests) == 2

    ollama_server.reply = lambda number, body: Reply(503, {"error": "server busy"})
    async with OllamaEmbeddingModel(
        base_url=ollama_server.host, model="m", dimensions=8, max_retries=0
    ) as model:
        with pytest.raises(EmbeddingError, match=r"HTTP 503: server busy \(gave up after 1 "):
            await model(["x"])


async def test_a_slow_server_times_out(ollama_server: OllamaServer) -> None:
    ollama_server.reply = lambda number, body: Reply(200, {"embeddings": [[0.0] * 8]}, delay=2)
    async with OllamaEmbeddingModel(
        base_url=ollama_server.host, model="m", dimensions=8, max_retries=0, timeout=0.2
    ) as model:
        with pytest.raises(EmbeddingError, match=r"no answer within 0.2 s"):
            await model(["x"])


async def test_the_key_is_sent_and_never_shown(ollama_server: OllamaServer) -> None:
    key = "proxy-key-0123456789"
    ollama_server.reply = lambda number, body: Reply(401, {"error": f"bad key {key}"})
    model = OllamaEmbeddingModel(
        credential=OllamaCredential(host=ollama_server.host, api_key=key), model="m", dimensions=8
    )
    async with model:
        with pytest.raises(EmbeddingError) as raised:
            await model(["x"])
    assert ollama_server.requests[0].headers["authorization"] == f"Bearer {key}"
    assert key not in str(raised.value) and "bad key ***" in str(raised.value)
    assert key not in repr(model.parameters)


async def test_vectors_of_the_wrong_size_or_count_are_refused(ollama_server: OllamaServer) -> None:
    async with OllamaEmbeddingModel(base_url=ollama_server.host, model="m", dimensions=16) as model:
        with pytest.raises(EmbeddingError, match="a vector of 8 dimensions, but dimensions is 16"):
            await model(["x"])
        ollama_server.reply = lambda number, body: Reply(200, {"embeddings": [[0.0] * 16]})
        with pytest.raises(EmbeddingError, match="sent 2 texts but the response holds 1 vectors"):
            await model(["x", "y"])
        ollama_server.reply = lambda number, body: Reply(200, {"embeddings": "none"})
        with pytest.raises(EmbeddingError, match="unexpected response: embeddings"):
            await model(["x"])
        ollama_server.reply = lambda number, body: Reply(200, b"<html>proxy error</html>")
        with pytest.raises(EmbeddingError, match="a response that is not JSON"):
            await model(["x"])
