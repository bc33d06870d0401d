"""A pipeline's knowledge bases and RAG middleware inside a real AgentScope 2.x ``Agent``."""

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
from agentscope.rag import DocumentSummary, KnowledgeBase, VectorSearchResult
from agentscope.tool import Toolkit

from ragflow_config.model import ScriptedChatModel
from ragflow_config.pipeline import BuiltPipeline

from .conftest import QUESTION, TEXTS, built_pipeline, chunk

# The source AgentScope's RAGMiddleware gives its hint; the agent adds hints of its own.
KNOWLEDGE_BASE_HINT = json.dumps({"label": "KnowledgeBase", "sublabel": ""})


def answer(text: str) -> ChatResponse:
    return ChatResponse(content=[TextBlock(text=text)], is_last=True)


def blocks_of(messages: list[Msg], kind: type) -> list:
    return [block for message in messages for block in message.content if isinstance(block, kind)]


def expected_output(hits: list) -> str:
    """AgentScope's format of hits: ``[i] (source: s)\\ntext``, a blank line between."""
    return "\n\n".join(
        f"[{i}] (source: {hit.chunk.source})\n{hit.chunk.content.text}"
        for i, hit in enumerate(hits, start=1)
    )


async def test_the_handles_are_agentscope_knowledge_bases_running_on_ours(
    static_pipeline: BuiltPipeline,
) -> None:
    native = static_pipeline.as_agentscope()
    assert set(native.knowledge_bases) == {"handbook-a", "handbook-b"}
    handle = native.knowledge_bases["handbook-a"]
    ours = static_pipeline.knowledge_bases["handbook-a"]
    assert isinstance(handle, KnowledgeBase)
    assert (handle.name, handle.description, handle.metadata_filter) == (
        "handbook-a",
        "Tenant a's handbook.",
        {"tenant_id": "a"},
    )

    hits = await handle.search([QUESTION, TextBlock(text="trains")], top_k=5)
    assert all(isinstance(hit, VectorSearchResult) for hit in hits)
    theirs = [hit.model_dump() for hit in hits]
    assert theirs == [hit.model_dump() for hit in await ours.search([QUESTION, "trains"], top_k=5)]
    assert {hit.chunk.metadata["tenant_id"] for hit in hits} == {"a"}

    summaries = await handle.list_documents()
    assert all(isinstance(summary, DocumentSummary) for summary in summaries)
    assert sorted(s.source for s in summaries) == sorted(TEXTS["handbook-a"])

    # A chunk written through the handle is stamped with a's tenant, whatever it claims.
    from agentscope.rag import Chunk as TheirChunk

    claimed = TheirChunk.model_validate(
        chunk("rogue.md", "A chunk claiming tenant b.").model_dump()
        | {"metadata": {"tenant_id": "b"}}
    )
    document_id = await handle.insert_document([claimed])
    [stored] = await handle.list_chunks(document_id)
    assert stored.metadata["tenant_id"] == "a"
    await handle.delete_document(document_id)
    assert document_id not in {s.document_id for s in await ours.list_documents()}


async def test_static_mode_puts_our_hits_of_the_tenant_into_the_models_input(
    static_pipeline: BuiltPipeline,
) -> None:
    native = static_pipeline.as_agentscope()
    [middleware] = native.middlewares
    assert isinstance(middleware, RAGMiddleware)
    model = ScriptedModel([answer("Twenty five days.")])
    agent = Agent(
        name="helper",
        system_prompt="Answer from the retrieved material.",
        model=model,
        toolkit=Toolkit(tools=await native.tools()),
        middlewares=native.middlewares,
    )

    reply = await agent.reply(Msg(name="user", content=[TextBlock(text=QUESTION)], role="user"))

    assert reply.get_text_content() == "Twenty five days."
    [first_call] = model.calls
    [hint] = [h for h in blocks_of(first_call, HintBlock) if h.source == KNOWLEDGE_BASE_HINT]
    ours = static_pipeline.knowledge_bases["handbook-a"]
    hits = await ours.search([f"user: {QUESTION}"], top_k=2)
    assert hits[0].chunk.source == "pto.md"
    template = RAGMiddleware.Parameters().hint_template  # the pipeline sets none
    assert hint.hint == template.format(context=expected_output(hits))
    assert "Tenant b" not in hint.hint and "thirty" not in hint.hint


async def test_agentic_mode_search_knowledge_returns_our_hits_of_the_tenant(
    agentic_pipeline: BuiltPipeline,
) -> None:
    native = agentic_pipeline.as_agentscope()
    tools = await native.tools()
    assert [tool.name for tool in tools] == ["search_knowledge"]
    call = ToolCallBlock(
        id="call-1", name="search_knowledge", input=json.dumps({"query": QUESTION})
    )
    model = ScriptedModel([ChatResponse(content=[call], is_last=True), answer("Twenty five days.")])
    agent = Agent(
        name="helper",
        system_prompt="Search when needed.",
        model=model,
        toolkit=Toolkit(tools=tools),
        middlewares=native.middlewares,
    )

    reply = await agent.reply(Msg(name="user", content=[TextBlock(text=QUESTION)], role="user"))

    assert reply.get_text_content() == "Twenty five days."
    first, second = model.calls
    # agentic mode injects nothing
    assert [h for h in blocks_of(first, HintBlock) if h.source == KNOWLEDGE_BASE_HINT] == []
    [result] = blocks_of(second, ToolResultBlock)
    hits = await agentic_pipeline.knowledge_bases["handbook-a"].search([QUESTION], top_k=2)
    assert hits[0].chunk.source == "pto.md"
    output = (
        result.output
        if isinstance(result.output, str)
        else "".join(block.text for block in result.output)
    )
    assert output == expected_output(hits)
    assert "Tenant b" not in output


async def test_the_pipelines_parameters_are_in_force(tmp_path: Path) -> None:
    extra = r', hint_template: "Notes:\n{context}\nEnd of notes."'
    async for built in built_pipeline(tmp_path, "static", extra):
        native = built.as_agentscope()
        model = ScriptedModel([answer("ok")])
        agent = Agent(
            name="helper", system_prompt="Answer.", model=model, middlewares=native.middlewares
        )
        await agent.reply(Msg(name="user", content=[TextBlock(text=QUESTION)], role="user"))
        [hint] = [
            h for h in blocks_of(model.calls[0], HintBlock) if h.source == KNOWLEDGE_BASE_HINT
        ]
        hits = await built.knowledge_bases["handbook-a"].search([f"user: {QUESTION}"], top_k=2)
        assert hint.hint == f"Notes:\n{expected_output(hits)}\nEnd of notes."


async def test_a_reranking_middleware_reranks_with_its_own_model(
    agentic_pipeline: BuiltPipeline,
) -> None:
    [ours] = agentic_pipeline.middlewares
    ours.rerank_model = ScriptedChatModel(['{"ids": ["c2", "c1"]}'])  # our chat model
    [search] = await agentic_pipeline.as_agentscope().tools()

    found = await search.call(query=QUESTION)

    hits = await agentic_pipeline.knowledge_bases["handbook-a"].search([QUESTION], top_k=4)
    assert len(hits) == 3  # every candidate of tenant a, then the model's choice
    assert found.content[0].text == expected_output([hits[1], hits[0]])
    [request] = ours.rerank_model.calls
    assert QUESTION in request.messages[0].content[0].text


async def test_our_chat_model_answers_as_an_agentscope_model() -> None:
    from agentscope.model import ChatModelBase

    from ragflow_config.agentscope_bridge._native import BridgedChatModel

    ours = ScriptedChatModel(["Hello, alice."])
    bridged = BridgedChatModel(ours)
    assert isinstance(bridged, ChatModelBase)
    response = await bridged(
        messages=[Msg(name="alice", content=[TextBlock(text="Hi")], role="user")]
    )
    assert [block.text for block in response.content] == ["Hello, alice."]
    [call] = ours.calls
    assert [(m.name, m.role, m.text) for m in call.messages] == [("alice", "user", "Hi")]
