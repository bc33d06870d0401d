"""OllamaChatModel through the ``ollama`` package, against a fake Ollama server;
and AgentScope's OpenAIChatModel name."""

from __future__ import annotations

import json

import pytest
from _ollama_fake import OllamaServer, chat_reply, not_pulled

from ragflow_config import ChatModelError
from ragflow_config.credential import OllamaCredential
from ragflow_config.message import DataBlock, Msg, TextBlock, ToolCallBlock, ToolResultBlock
from ragflow_config.model import OllamaChatModel, OpenAIChatModel, OpenAICompatibleChatModel

TOOL = {
    "type": "function",
    "function": {
        "name": "search",
        "description": "Search the knowledge base.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}},
    },
}


async def test_the_credential_host_is_where_requests_go(
    ollama_server: OllamaServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OLLAMA_API_KEY", raising=False)
    ollama_server.replies = [chat_reply("Hi.")]
    credential = OllamaCredential(host=ollama_server.host)
    async with OllamaChatModel(
        credential=credential, model="qwen3", temperature=0.2, max_tokens=64
    ) as model:
        response = await model([Msg("alice", "Hello", "user")])

    assert [type(block) for block in response.content] == [TextBlock]
    assert response.text == "Hi."
    [seen] = ollama_server.requests
    assert seen.path == "/api/chat"
    assert seen.body["model"] == "qwen3"
    assert seen.body["stream"] is False
    assert seen.body["messages"] == [{"role": "user", "content": "Hello"}]
    assert seen.body["options"] == {"temperature": 0.2, "num_predict": 64}
    assert seen.body["think"] is False  # as AgentScope: no long reasoning before a short answer
    assert "authorization" not in seen.headers
    assert model.service == f"Ollama chat (qwen3) at {ollama_server.host}"


async def test_tool_calls_come_back_and_their_results_go_out_by_tool_name(
    ollama_server: OllamaServer,
) -> None:
    ollama_server.replies = [
        chat_reply(tool_calls=[{"function": {"name": "search", "arguments": {"query": "pto"}}}]),
        chat_reply("25 days."),
    ]
    async with OllamaChatModel(base_url=ollama_server.host, model="qwen3") as model:
        question = Msg("alice", "How many PTO days?", "user")
        first = await model([question], tools=[TOOL])
        [call] = first.content
        assert isinstance(call, ToolCallBlock)
        assert (call.name, json.loads(call.input)) == ("search", {"query": "pto"})
        result = ToolResultBlock(
            id=call.id, name="search", output=[TextBlock(text="PTO: 25 days a year.")]
        )
        answer = await model([question, Msg("bot", [call, result], "assistant")])

    assert answer.text == "25 days."
    first_request, second_request = ollama_server.requests
    assert first_request.body["tools"][0]["function"]["name"] == "search"
    assert second_request.body["messages"][1:] == [
        {
            "role": "assistant",
            "tool_calls": [{"function": {"name": "search", "arguments": {"query": "pto"}}}],
        },
        {"role": "tool", "content": "PTO: 25 days a year.", "tool_name": "search"},
    ]


async def test_a_model_not_pulled_says_how_to_pull_it(ollama_server: OllamaServer) -> None:
    ollama_server.reply = lambda number, body: not_pulled(body["model"])
    async with OllamaChatModel(base_url=ollama_server.host, model="qwen3:14b") as model:
        with pytest.raises(ChatModelError, match=r"run `ollama pull qwen3:14b`"):
            await model([Msg("alice", "Hello", "user")])
    assert len(ollama_server.requests) == 1


async def test_a_vision_model_gets_images_inline(ollama_server: OllamaServer) -> None:
    ollama_server.replies = [chat_reply("A cat.")] * 2
    image = DataBlock.from_bytes(b"\x89PNG-bytes", "image/png")
    question = Msg("alice", [TextBlock(text="What is this?"), image], "user")
    async with OllamaChatModel(base_url=ollama_server.host, model="llava", vision=True) as model:
        await model([question])
    async with OllamaChatModel(base_url=ollama_server.host, model="qwen3") as model:
        await model([question])

    seeing, blind = (seen.body["messages"][0] for seen in ollama_server.requests)
    assert seeing == {"role": "user", "content": "What is this?", "images": [image.source.data]}
    assert "images" not in blind and "image/png" in blind["content"]  # a placeholder instead


def test_ollama_defaults_to_the_local_server_and_openai_keeps_its_name() -> None:
    assert OllamaChatModel(model="qwen3").host == "http://localhost:11434"
    assert OpenAIChatModel is OpenAICompatibleChatModel
