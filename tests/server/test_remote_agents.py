"""A real AgentScope agent in this process, searching a knowledge base that a `serve`
process serves, through `RemoteKnowledgeBase` and AgentScope's own `RAGMiddleware`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("agentscope", reason="the agentscope extra is not installed")

from _agentscope_model import ScriptedModel
from agentscope.agent import Agent
from agentscope.message import HintBlock, Msg, TextBlock, ToolCallBlock, ToolResultBlock
from agentscope.middleware import RAGMiddleware
from agentscope.model import ChatResponse
from agentscope.rag import KnowledgeBase as TheirKnowledgeBase
from agentscope.tool import Toolkit

from ragflow_config.agentscope_bridge import knowledge_base
from ragflow_config.pipeline import Pipeline
from ragflow_config.rag import RemoteKnowledgeBase, VectorSearchResult

from ._serving import TOKEN, ServerProcess

QUESTION = "How do I read a file line by line?"
HINT_SOURCE = json.dumps({"label": "KnowledgeBase", "sublabel": ""})


def answer(text: str) -> ChatResponse:
    return ChatResponse(content=[TextBlock(text=text)], is_last=True)


def blocks_of(messages: list[Msg], kind: type) -> list:
    return [block for message in messages for block in message.content if isinstance(block, kind)]


def as_agentscope_formats(hits: list[VectorSearchResult]) -> str:
    return "\n\n".join(
        f"[{i}] (source: {hit.chunk.source})\n{hit.chunk.content.text}"  # type: ignore[union-attr]
        for i, hit in enumerate(hits, start=1)
    )


async def _local_hits(file: Path, query: str) -> list[VectorSearchResult]:
    async with Pipeline.load(file).build(["tutorial"]) as built:
        return await built.knowledge_base("tutorial").search([query], top_k=2)


async def test_static_mode_hints_the_served_hits(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    expected = await _local_hits(indexed, f"user: {QUESTION}")  # AgentScope's query: name, text
    assert expected[0].chunk.source == "files.md"
    server = server_process(str(indexed), env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    async with RemoteKnowledgeBase(server.url, "tutorial", token=TOKEN) as remote:
        handle = knowledge_base(remote)
        assert isinstance(handle, TheirKnowledgeBase)
        assert handle.description == "The Python tutorial, for newcomers."
        middleware = RAGMiddleware(
            knowledge_bases=[handle], parameters=RAGMiddleware.Parameters(mode="static", top_k=2)
        )
        model = ScriptedModel([answer("Use a for loop over the file.")])
        agent = Agent(name="helper", system_prompt="Answer.", model=model, middlewares=[middleware])

        reply = await agent.reply(Msg(name="user", content=[TextBlock(text=QUESTION)], role="user"))

    assert reply.get_text_content() == "Use a for loop over the file."
    [hint] = [h for h in blocks_of(model.calls[0], HintBlock) if h.source == HINT_SOURCE]
    template = RAGMiddleware.Parameters().hint_template
    assert hint.hint == template.format(context=as_agentscope_formats(expected))
    assert "zanzibar" not in hint.hint  # the howto tenant's, never the tutorial's
    with pytest.raises(TypeError, match="read-only"):
        await handle.delete_document("any")


async def test_agentic_mode_search_knowledge_returns_the_served_hits(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    expected = await _local_hits(indexed, QUESTION)
    server = server_process(str(indexed))
    async with RemoteKnowledgeBase(server.url, "tutorial") as remote:
        middleware = RAGMiddleware(
            knowledge_bases=[knowledge_base(remote)],
            parameters=RAGMiddleware.Parameters(mode="agentic", top_k=2),
        )
        call = ToolCallBlock(
            id="call-1", name="search_knowledge", input=json.dumps({"query": QUESTION})
        )
        model = ScriptedModel([ChatResponse(content=[call], is_last=True), answer("A loop.")])
        agent = Agent(
            name="helper",
            system_prompt="Search when needed.",
            model=model,
            toolkit=Toolkit(tools=await middleware.list_tools()),
            middlewares=[middleware],
        )

        reply = await agent.reply(Msg(name="user", content=[TextBlock(text=QUESTION)], role="user"))

    assert reply.get_text_content() == "A loop."
    first, second = model.calls
    assert [h for h in blocks_of(first, HintBlock) if h.source == HINT_SOURCE] == []
    [result] = blocks_of(second, ToolResultBlock)
    output = (
        result.output
        if isinstance(result.output, str)
        else "".join(block.text for block in result.output)
    )
    assert output == as_agentscope_formats(expected)
