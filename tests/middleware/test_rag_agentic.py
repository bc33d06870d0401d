"""Agentic mode, both modes together, and knowledge bases on different embedding models."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragflow_config.agent import Agent
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import (
    HintBlock,
    Msg,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
    ToolResultState,
)
from ragflow_config.middleware import RAGMiddleware
from ragflow_config.model import ChatResponse, ScriptedChatModel
from ragflow_config.rag import Chunk, KnowledgeBase, QdrantStore
from ragflow_config.tool import Toolkit

from .conftest import HR_DOCUMENTS, MakeKB


def search(arguments: dict[str, Any], call_id: str = "call_1") -> ChatResponse:
    """A model answer that calls search_knowledge."""
    return ChatResponse(
        content=[ToolCallBlock(id=call_id, name="search_knowledge", input=json.dumps(arguments))]
    )


def tool_results(messages: list[Msg]) -> list[ToolResultBlock]:
    return [b for m in messages for b in m.content if isinstance(b, ToolResultBlock)]


async def agentic_agent(
    knowledge_bases: list[KnowledgeBase], model: ScriptedChatModel, **parameters: Any
) -> Agent:
    middleware = RAGMiddleware(
        knowledge_bases=knowledge_bases,
        parameters=RAGMiddleware.Parameters(mode="agentic", **parameters),
    )
    return Agent(
        "helper",
        "Call search_knowledge when needed.",
        model,
        Toolkit(tools=await middleware.list_tools()),
        [middleware],
    )


async def test_the_model_is_offered_one_tool_describing_every_knowledge_base(
    hr_kb: KnowledgeBase, it_kb: KnowledgeBase
):
    model = ScriptedChatModel(["Hello."])
    agent = await agentic_agent([hr_kb, it_kb], model)

    await agent.reply(Msg("alice", "Hi", "user"))

    [declaration] = model.calls[0].tools or []
    function = declaration["function"]
    assert declaration["type"] == "function"
    assert function["name"] == "search_knowledge"
    assert function["description"].endswith(
        "## Equipped Knowledge Bases\n"
        "The agent is currently equipped with 2 knowledge base(s):\n"
        "- **hr**: HR policies: leave, pay, expenses\n"
        "- **it**: IT rules for laptops and remote access"
    )
    schema = function["parameters"]
    assert schema["required"] == ["query"]
    assert schema["properties"]["query"]["type"] == "string"
    assert schema["properties"]["knowledge_bases"]["anyOf"] == [
        {"type": "array", "items": {"type": "string", "enum": ["hr", "it"]}},
        {"type": "null"},
    ]
    assert "title" not in json.dumps(schema)


async def test_tool_output_reaches_the_model_in_the_reference_format(hr_kb: KnowledgeBase):
    model = ScriptedChatModel([search({"query": "days of paid time off per year"}), "25 days."])
    agent = await agentic_agent([hr_kb], model, top_k=2)

    answer = await agent.reply(Msg("alice", "How much PTO do I get?", "user"))

    assert answer.text == "25 days."
    [result] = tool_results(model.calls[1].messages)
    assert (result.id, result.name, result.state) == (
        "call_1",
        "search_knowledge",
        ToolResultState.SUCCESS,
    )
    [text] = result.output
    assert text.text.startswith(
        "[1] (source: pto.md)\nEmployees receive 25 days of paid time off per year.\n\n[2] (source: "
    )
    assert text.text.count("(source: ") == 2


async def test_a_subset_of_knowledge_bases_limits_the_search(
    hr_kb: KnowledgeBase, it_kb: KnowledgeBase
):
    model = ScriptedChatModel([search({"query": "days", "knowledge_bases": ["it"]}), "done"])
    agent = await agentic_agent([hr_kb, it_kb], model, top_k=5)

    await agent.reply(Msg("alice", "?", "user"))

    [result] = tool_results(model.calls[1].messages)
    sources = [line for line in result.output[0].text.splitlines() if "(source: " in line]
    assert sources == ["[1] (source: laptop.md)", "[2] (source: vpn.md)"]


async def test_an_unknown_knowledge_base_is_an_error_the_model_reads(hr_kb: KnowledgeBase):
    model = ScriptedChatModel(
        [
            search({"query": "paid time off", "knowledge_bases": ["finance"]}),
            search({"query": "paid time off"}, call_id="call_2"),
            "25 days.",
        ]
    )
    agent = await agentic_agent([hr_kb], model)

    answer = await agent.reply(Msg("alice", "PTO?", "user"))

    assert answer.text == "25 days."
    failed, succeeded = tool_results(model.calls[2].messages)
    assert failed.state == ToolResultState.ERROR
    assert failed.output[0].text == (
        "Input validation failed for tool search_knowledge at knowledge_bases/0: "
        "'finance' is not one of ['hr']"
    )
    assert succeeded.state == ToolResultState.SUCCESS
    assert "(source: pto.md)" in succeeded.output[0].text


async def test_no_hit_says_so(hr_kb: KnowledgeBase):
    model = ScriptedChatModel([search({"query": "football results"}), "No idea."])
    agent = await agentic_agent([hr_kb], model, score_threshold=0.99)

    await agent.reply(Msg("alice", "Who won?", "user"))

    [result] = tool_results(model.calls[1].messages)
    assert result.output[0].text == "No relevant content found."


async def test_static_mode_offers_no_tool_and_agentic_a_fresh_one_each_time(
    hr_kb: KnowledgeBase,
):
    assert await RAGMiddleware([hr_kb], mode="static").list_tools() == []
    agentic = RAGMiddleware([hr_kb])
    first, second = await agentic.list_tools(), await agentic.list_tools()
    assert len(first) == len(second) == 1
    assert first[0] is not second[0]


async def test_without_knowledge_bases_the_tool_tells_the_model_not_to_call_it():
    [tool] = await RAGMiddleware([]).list_tools()
    assert tool.description.endswith(
        "No knowledge bases are currently equipped. **Do not call this tool** — it will "
        "return nothing."
    )


async def test_knowledge_base_names_must_be_unique(hr_kb: KnowledgeBase, make_kb: MakeKB):
    twin = await make_kb("hr", {}, collection="hr_copy")
    with pytest.raises(ValueError, match="'hr' given more than once"):
        RAGMiddleware([hr_kb, twin])


async def test_a_chunk_reached_through_two_knowledge_bases_is_returned_once(
    make_kb: MakeKB,
):
    # Two handles on one collection: the same chunks, found twice, listed once.
    everyone = await make_kb("everyone", HR_DOCUMENTS, collection="shared")
    managers = await make_kb("managers", {}, collection="shared")
    middleware = RAGMiddleware([everyone, managers], top_k=3)

    hits = await middleware.retrieve(["paid time off days", "paid leave for parents"])

    keys = [(hit.document_id, hit.chunk.chunk_index) for hit in hits]
    assert sorted(keys) == sorted(set(keys))
    assert len(keys) == 3


async def test_both_modes_together(hr_kb: KnowledgeBase):
    static = RAGMiddleware([hr_kb], RAGMiddleware.Parameters(mode="static", top_k=1))
    agentic = RAGMiddleware([hr_kb], RAGMiddleware.Parameters(mode="agentic", top_k=1))
    model = ScriptedChatModel([search({"query": "travel expense reimbursement"}), "Both."])
    agent = Agent(
        "hybrid",
        "Answer from the material.",
        model,
        Toolkit(tools=await agentic.list_tools()),
        [static, agentic],
    )

    await agent.reply(Msg("alice", "How many days of paid time off?", "user"))

    first, second = model.calls
    first_hints = [b for m in first.messages for b in m.content if isinstance(b, HintBlock)]
    assert len(first_hints) == 1
    assert "(source: pto.md)" in str(first_hints[0].hint)
    assert [t["function"]["name"] for t in first.tools or []] == ["search_knowledge"]
    assert not any(isinstance(b, HintBlock) for m in second.messages for b in m.content)
    [result] = tool_results(second.messages)
    assert result.output[0].text.startswith("[1] (source: expenses.md)\n")


async def test_knowledge_bases_on_different_models_and_metrics_are_fused_by_rank(
    store: QdrantStore, make_kb: MakeKB
):
    # hr: 64-dim vectors, cosine (scores near 1). it: 128-dim vectors, euclidean
    # distance (scores are negated distances, always below 0). A raw-score merge
    # would rank every hr hit above every it hit.
    async with QdrantStore(location=":memory:", distance="euclidean") as euclidean:
        hr = await make_kb("hr", HR_DOCUMENTS, embedding_model=HashingEmbeddingModel(dimensions=64))
        it = await make_kb(
            "it",
            {"laptop.md": "Laptops get 25 days of encryption updates per year."},
            embedding_model=HashingEmbeddingModel(dimensions=128),
            vector_store=euclidean,
        )
        query = ["days per year"]
        hr_alone = await RAGMiddleware([hr], top_k=2).retrieve(query)
        it_alone = await RAGMiddleware([it], top_k=2).retrieve(query)
        mixed = await RAGMiddleware([hr, it], top_k=2).retrieve(query)

    assert all(hit.score > 0 for hit in hr_alone)
    assert all(hit.score < 0 for hit in it_alone)
    assert [hit.chunk.source for hit in mixed] == [hr_alone[0].chunk.source, "laptop.md"]


async def test_knowledge_bases_in_one_score_space_are_merged_by_score(
    hr_kb: KnowledgeBase, it_kb: KnowledgeBase
):
    # hr's top two both beat it's best hit: rank fusion would interleave them.
    query = ["paid time off and paid leave for laptop"]
    separately = [
        *await RAGMiddleware([hr_kb], top_k=3).retrieve(query),
        *await RAGMiddleware([it_kb], top_k=3).retrieve(query),
    ]

    together = await RAGMiddleware([hr_kb, it_kb], top_k=3).retrieve(query)

    by_score = sorted(separately, key=lambda hit: hit.score, reverse=True)[:3]
    assert [hit.chunk.source for hit in together] == [hit.chunk.source for hit in by_score]
    assert [hit.chunk.source for hit in together][:2] == ["pto.md", "parental.md"]


async def test_calling_the_tool_directly_returns_a_tool_chunk(hr_kb: KnowledgeBase):
    # AgentScope code runs a tool with `await tool(**arguments)`.
    middleware = RAGMiddleware([hr_kb], mode="agentic", top_k=1)
    [tool] = await middleware.list_tools()

    found = await tool(query="How many days of paid time off?")
    dumped = found.model_dump()
    assert (dumped["state"], dumped["is_last"], dumped["metadata"]) == ("success", True, {})
    assert [block.text for block in found.content] == [  # type: ignore[union-attr]
        f"[1] (source: pto.md)\n{HR_DOCUMENTS['pto.md']}"
    ]
    nothing = await tool(query="anything", knowledge_bases=["no-such-base"])
    assert (nothing.state, [b.text for b in nothing.content]) == (  # type: ignore[union-attr]
        "success",
        ["No relevant content found."],
    )


async def test_a_failing_tool_called_directly_reports_an_error_chunk(hr_kb: KnowledgeBase):
    middleware = RAGMiddleware([hr_kb], mode="agentic")
    [tool] = await middleware.list_tools()

    failed = await tool()  # no query: the call itself raises
    assert failed.state == "error"
    assert [b.text for b in failed.content] == ["Tool search_knowledge failed: 'query'"]  # type: ignore[union-attr]


async def test_a_knowledge_base_on_a_model_of_any_class_is_searched(store: QdrantStore):
    class DuckTypedModel:  # as AgentScope code writes one: the interface, no base class
        supports_multimodal = False
        dimensions = 64

        def __init__(self) -> None:
            self.hashing = HashingEmbeddingModel(dimensions=64)

        async def __call__(self, inputs: list[Any]) -> Any:
            return await self.hashing(inputs)

    kb = KnowledgeBase("hr", "HR policies", DuckTypedModel(), store, "duck")  # type: ignore[arg-type]
    await kb.insert_document(
        [
            Chunk(
                content=TextBlock(text=HR_DOCUMENTS["pto.md"]),
                source="pto.md",
                chunk_index=0,
                total_chunks=1,
            )
        ],
        document_id="pto.md",
    )
    [tool] = await RAGMiddleware([kb], mode="agentic", top_k=1).list_tools()

    found = await tool(query="paid time off")
    assert found.state == "success"
    assert [b.text for b in found.content] == [f"[1] (source: pto.md)\n{HR_DOCUMENTS['pto.md']}"]  # type: ignore[union-attr]
