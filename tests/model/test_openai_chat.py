"""OpenAICompatibleChatModel and DashScopeChatModel against a live local chat/completions server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator

import pytest

from ragflow_config._errors import ChatModelError
from ragflow_config.agent import Agent
from ragflow_config.credential import DashScopeCredential, MissingSecretError, OpenAICredential
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import AssistantMsg, DataBlock, Msg, TextBlock, ThinkingBlock
from ragflow_config.middleware import RAGMiddleware
from ragflow_config.model import DashScopeChatModel, OpenAICompatibleChatModel
from ragflow_config.rag import Chunk, KnowledgeBase, QdrantStore
from ragflow_config.tool import Toolkit

from ._server import ChatServer, Reply, completion, error, tool_call

KEY = "sk-test-0123456789"
PTO = "Employees receive 25 days of paid time off per year."


@pytest.fixture
async def hr_kb() -> AsyncIterator[KnowledgeBase]:
    async with QdrantStore(location=":memory:") as store:
        kb = KnowledgeBase("hr", "HR policies", HashingEmbeddingModel(dimensions=64), store, "hr")
        for source, text in {
            "pto.md": PTO,
            "expenses.md": "Travel expenses are reimbursed within 30 days.",
        }.items():
            chunk = Chunk(
                content=TextBlock(text=text), source=source, chunk_index=0, total_chunks=1
            )
            await kb.insert_document([chunk], document_id=source)
        yield kb


@pytest.fixture
async def model(server: ChatServer) -> AsyncIterator[OpenAICompatibleChatModel]:
    async with OpenAICompatibleChatModel(
        base_url=server.url, model="test-model", credential=OpenAICredential(api_key=KEY)
    ) as chat_model:
        yield chat_model


async def test_an_agent_reply_with_a_search_knowledge_round_trip(
    server: ChatServer, model: OpenAICompatibleChatModel, hr_kb: KnowledgeBase
):
    middleware = RAGMiddleware(
        knowledge_bases=[hr_kb], parameters=RAGMiddleware.Parameters(top_k=1)
    )
    agent = Agent(
        "hr-bot",
        "Use search_knowledge.",
        model,
        Toolkit(tools=await middleware.list_tools()),
        [middleware],
    )
    server.replies = [
        completion(
            tool_calls=[
                tool_call(
                    "call_abc", "search_knowledge", {"query": "days of paid time off per year"}
                )
            ]
        ),
        completion("You get 25 days of paid time off."),
    ]

    answer = await agent.reply(Msg("alice", "How much PTO do I get?", "user"))

    assert answer.text == "You get 25 days of paid time off."
    first, second = server.requests
    assert first.path == "/v1/chat/completions"
    assert first.headers["authorization"] == f"Bearer {KEY}"
    assert first.body["model"] == "test-model"
    assert first.body["messages"] == [
        {"role": "system", "content": "Use search_knowledge."},
        {"role": "user", "content": "How much PTO do I get?"},
    ]
    [declaration] = first.body["tools"]
    assert declaration["function"]["name"] == "search_knowledge"
    assert declaration["function"]["parameters"]["properties"]["knowledge_bases"]["anyOf"][0] == {
        "type": "array",
        "items": {"type": "string", "enum": ["hr"]},
    }
    assert second.body["messages"][2:] == [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_abc",
                    "type": "function",
                    "function": {
                        "name": "search_knowledge",
                        "arguments": json.dumps({"query": "days of paid time off per year"}),
                    },
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_abc", "content": f"[1] (source: pto.md)\n{PTO}"},
    ]


async def test_a_static_hint_is_its_own_user_turn(
    server: ChatServer, model: OpenAICompatibleChatModel, hr_kb: KnowledgeBase
):
    middleware = RAGMiddleware([hr_kb], mode="static", top_k=1, hint_template="Context:\n{context}")
    server.replies = [completion("25 days.")]

    await Agent("hr-bot", "", model, middlewares=[middleware]).reply(
        Msg("alice", "How many days of paid time off?", "user")
    )

    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": "How many days of paid time off?"},
        {"role": "user", "content": f"Context:\n[1] (source: pto.md)\n{PTO}"},
    ]
    assert "tools" not in server.requests[0].body


async def test_thinking_blocks_are_not_sent_back(
    server: ChatServer, model: OpenAICompatibleChatModel
):
    server.replies = [completion("ok")]
    earlier = AssistantMsg(
        name="bot", content=[ThinkingBlock(thinking="private"), TextBlock(text="Hello.")]
    )

    await model([Msg("alice", "Hi", "user"), earlier, Msg("alice", "And?", "user")])

    assert server.requests[0].body["messages"] == [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "And?"},
    ]


async def test_rerank_over_http_reads_json_in_a_code_fence(
    server: ChatServer, model: OpenAICompatibleChatModel, hr_kb: KnowledgeBase
):
    server.replies = [completion('Ranking:\n```json\n{"ids": ["c2", "c1"]}\n```')]
    middleware = RAGMiddleware([hr_kb], rerank_model=model, top_k=2)

    hits = await middleware.retrieve(["paid time off days"])

    assert [hit.chunk.source for hit in hits] == ["expenses.md", "pto.md"]
    [turn] = server.requests[0].body["messages"]
    assert turn["role"] == "user"
    assert '<candidate id="c1" source="pto.md">' in turn["content"]
    assert '"ids"' in turn["content"]  # the JSON Schema of the answer


async def test_transient_failures_are_retried(server: ChatServer, model: OpenAICompatibleChatModel):
    server.replies = [error(503, "overloaded", {"Retry-After": "0"}), completion("fine")]

    response = await model([Msg("alice", "hi", "user")])

    assert response.text == "fine"
    assert len(server.requests) == 2


async def test_a_rejected_request_names_the_server_and_hides_the_key(
    server: ChatServer, model: OpenAICompatibleChatModel
):
    server.replies = [error(401, f"Incorrect API key provided: {KEY}")]

    with pytest.raises(ChatModelError) as raised:
        await model([Msg("alice", "hi", "user")])

    message = str(raised.value)
    assert message.startswith(f"OpenAI-compatible chat (test-model) at {server.url}: HTTP 401")
    assert KEY not in message
    assert len(server.requests) == 1


async def test_a_malformed_answer_is_a_clear_error(
    server: ChatServer, model: OpenAICompatibleChatModel
):
    server.replies = [Reply(200, {"choices": []})]

    with pytest.raises(ChatModelError, match="unexpected response: choices: List should have"):
        await model([Msg("alice", "hi", "user")])


async def test_tool_arguments_sent_as_an_object_and_missing_ids_are_accepted(
    server: ChatServer, model: OpenAICompatibleChatModel
):
    server.replies = [
        Reply(
            200,
            {
                "choices": [
                    {
                        "message": {
                            "content": None,
                            "tool_calls": [
                                {
                                    "type": "function",
                                    "function": {
                                        "name": "search_knowledge",
                                        "arguments": {"query": "x"},
                                    },
                                }
                            ],
                        }
                    }
                ]
            },
        )
    ]

    response = await model([Msg("alice", "hi", "user")])

    [call] = response.content
    assert call.type == "tool_call"
    assert json.loads(call.input) == {"query": "x"}
    assert call.id.startswith("call_")


@pytest.mark.parametrize("vision", [True, False])
async def test_images_are_sent_only_to_vision_models(server: ChatServer, vision: bool):
    image = DataBlock.from_bytes(b"\x89PNG", "image/png", name="chart.png")
    server.replies = [completion("A chart.")]
    async with OpenAICompatibleChatModel(base_url=server.url, model="m", vision=vision) as model:
        await model([Msg("alice", [TextBlock(text="What is this?"), image], "user")])

    content = server.requests[0].body["messages"][0]["content"]
    if vision:
        assert content == [
            {"type": "text", "text": "What is this?"},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
        ]
    else:
        assert (
            content
            == "What is this?\n[image/png chart.png: not shown, this conversation carries text only]"
        )
    assert "authorization" not in server.requests[0].headers  # no key configured, none sent


async def test_temperature_is_sent_only_when_set(server: ChatServer):
    server.replies = [completion("a"), completion("b")]
    for temperature in (None, 0.2):
        async with OpenAICompatibleChatModel(
            base_url=server.url, model="m", temperature=temperature
        ) as model:
            await model([Msg("alice", "hi", "user")])

    assert "temperature" not in server.requests[0].body
    assert server.requests[1].body["temperature"] == 0.2


def test_dashscope_needs_its_key_and_defaults_to_compatible_mode():
    with pytest.raises(MissingSecretError, match="DASHSCOPE_API_KEY"):
        DashScopeChatModel()
    model = DashScopeChatModel(credential=DashScopeCredential(api_key=KEY), model="qwen-max")
    assert model.parameters.base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert model.service == (
        "DashScope chat (qwen-max) at https://dashscope.aliyuncs.com/compatible-mode/v1"
    )


async def test_dashscope_reads_its_key_from_the_environment(
    server: ChatServer, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    server.replies = [completion("你好")]
    async with DashScopeChatModel(base_url=server.url) as model:
        response = await model([Msg("alice", "hi", "user")])

    assert response.text == "你好"
    assert server.requests[0].body["model"] == "qwen-max"
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_both_modes_over_two_replies_make_a_conversation_the_server_accepts(
    server: ChatServer, model: OpenAICompatibleChatModel, hr_kb: KnowledgeBase
):
    static = RAGMiddleware(
        [hr_kb], mode="static", top_k=1, persist_hint=True, hint_template="Context:\n{context}"
    )
    agentic = RAGMiddleware([hr_kb], top_k=1)
    agent = Agent(
        "hr-bot", "Be brief.", model, Toolkit(await agentic.list_tools()), [static, agentic]
    )
    server.replies = [
        completion(tool_calls=[tool_call("call_1", "search_knowledge", {"query": "travel"})]),
        completion("25 days; travel within 30 days."),
        completion("Yes."),
    ]

    await agent.reply(Msg("alice", "How many days of paid time off?", "user"))
    await agent.reply(Msg("alice", "Are travel expenses reimbursed?", "user"))

    roles = [m["role"] for m in server.requests[2].body["messages"]]
    assert roles == ["system", "user", "user", "assistant", "tool", "assistant", "user", "user"]
    hints = [
        m["content"]
        for m in server.requests[2].body["messages"]
        if m["role"] == "user" and m["content"].startswith("Context:")
    ]
    assert hints == [
        f"Context:\n[1] (source: pto.md)\n{PTO}",
        "Context:\n[1] (source: expenses.md)\nTravel expenses are reimbursed within 30 days.",
    ]
