"""OllamaChatModel and AgentScope's OpenAIChatModel name, against a live local server."""

from __future__ import annotations

import pytest

from ragflow_config.credential import OllamaCredential
from ragflow_config.message import Msg
from ragflow_config.model import OllamaChatModel, OpenAIChatModel, OpenAICompatibleChatModel

from ._server import ChatServer, completion


async def test_ollama_credential_host_is_where_requests_go(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    server.replies = [completion("Hi.")]
    host = server.url.removesuffix("/v1")
    async with OllamaChatModel(credential=OllamaCredential(host=host), model="qwen3") as model:
        response = await model([Msg("alice", "Hello", "user")])

    assert [block.text for block in response.content] == ["Hi."]  # type: ignore[union-attr]
    [seen] = server.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.body["model"] == "qwen3"
    assert "authorization" not in seen.headers
    assert model.service == f"Ollama chat (qwen3) at {server.url}"


def test_ollama_defaults_to_the_local_server_and_openai_keeps_its_name() -> None:
    assert OllamaChatModel(model="qwen3").parameters.base_url == "http://localhost:11434/v1"
    assert OpenAIChatModel is OpenAICompatibleChatModel
