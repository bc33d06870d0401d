"""``RAGMiddleware`` against AgentScope 2.0.11's: the static hint and the agentic tool.

Each side runs its own middleware, agent and knowledge bases (the same
hashing model object, each on its own in-memory Qdrant, the same documents),
with a scripted chat model; the hint the model receives and the
``search_knowledge`` tool's declaration and output are compared field by
field. README rows name the differences the tests allow for.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")

import agentscope.agent as their_agent
import agentscope.message as their_message
import agentscope.middleware as their_middleware
import agentscope.model as their_model
import agentscope.rag as theirs
import agentscope.tool as their_tool
from _agentscope_model import ScriptedModel

import ragflow_config.message as our_message
import ragflow_config.rag as ours
from ragflow_config.agent import Agent
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.middleware import RAGMiddleware
from ragflow_config.model import ChatResponse, ScriptedChatModel
from ragflow_config.tool import Toolkit

from ._compare import plain
from .test_knowledge_base import SharedModel

DOCUMENTS = {
    "hr": {
        "pto.md": "Employees receive 25 days of paid time off per year.",
        "expenses.md": "Travel expenses are reimbursed within 30 days when receipts are attached.",
        "parental.md": "Parental leave is 16 weeks of paid leave for every new parent.",
    },
    "it": {
        "laptop.md": "Laptops must use full disk encryption and lock the screen after 5 minutes.",
        "vpn.md": "Connect to the VPN before opening internal dashboards from home.",
    },
}
DESCRIPTIONS = {"hr": "HR policies: leave, pay, expenses", "it": "IT rules for laptops"}
QUESTIONS = [
    "How many days of paid time off do employees get?",
    "When are travel expenses reimbursed?",
    "VPN before internal dashboards",
    "nothing matches zzzz",
]


@pytest.fixture
async def knowledge_bases() -> AsyncIterator[tuple[list[Any], list[Any]]]:
    model = HashingEmbeddingModel(dimensions=256)
    async with (
        theirs.QdrantStore(location=":memory:") as their_store,
        ours.QdrantStore(location=":memory:") as our_store,
    ):
        their_kbs, our_kbs = [], []
        for name, documents in DOCUMENTS.items():
            their_kb = theirs.KnowledgeBase(
                name=name,
                description=DESCRIPTIONS[name],
                embedding_model=SharedModel(model),
                vector_store=their_store,
                collection=name,
            )
            our_kb = ours.KnowledgeBase(
                name=name,
                description=DESCRIPTIONS[name],
                embedding_model=model,
                vector_store=our_store,
                collection=name,
            )
            for source, text in documents.items():
                for module, message, kb in (
                    (theirs, their_message, their_kb),
                    (ours, our_message, our_kb),
                ):
                    chunk = module.Chunk(
                        content=message.TextBlock(text=text),
                        source=source,
                        chunk_index=0,
                        total_chunks=1,
                    )
                    await kb.insert_document([chunk], document_id=source)
            their_kbs.append(their_kb)
            our_kbs.append(our_kb)
        yield their_kbs, our_kbs


async def tools(kbs: tuple[list[Any], list[Any]], **parameters: Any) -> tuple[Any, Any]:
    their_kbs, our_kbs = kbs
    their = their_middleware.RAGMiddleware(
        their_kbs, parameters=their_middleware.RAGMiddleware.Parameters(**parameters)
    )
    our = RAGMiddleware(our_kbs, parameters=RAGMiddleware.Parameters(**parameters))
    [their_tool_] = await their.list_tools()
    [our_tool] = await our.list_tools()
    return their_tool_, our_tool


async def test_the_tool_is_declared_alike(knowledge_bases: tuple[list, list]) -> None:
    """The model reads AgentScope's words: the description and the arguments'. README row:
    the search_knowledge schema (no leaked docstring; an empty query and unknown arguments
    are refused)."""
    their, our = await tools(knowledge_bases, mode="agentic")
    assert our.name == their.name == "search_knowledge"
    assert our.description == their.description
    assert their.description.endswith(
        "- **hr**: HR policies: leave, pay, expenses\n- **it**: IT rules for laptops"
    )

    def shape(schema: Any) -> Any:
        if isinstance(schema, dict):
            return {
                k: shape(v)
                for k, v in schema.items()
                if k not in ("title", "minLength", "additionalProperties")
            }
        if isinstance(schema, list):
            return [shape(v) for v in schema]
        return schema

    their_schema = shape(their.input_schema)
    assert their_schema.pop("description") == their_middleware._rag._SearchParams.__doc__
    assert shape(our.input_schema) == their_schema
    assert our.input_schema["properties"]["query"]["minLength"] == 1
    assert our.input_schema["additionalProperties"] is False


async def test_without_knowledge_bases_the_tool_is_declared_alike() -> None:
    [their] = await their_middleware.RAGMiddleware([]).list_tools()
    [our] = await RAGMiddleware([]).list_tools()
    assert our.description == their.description
    assert "**Do not call this tool**" in our.description


@pytest.mark.parametrize("subset", [None, ["hr"], ["it"], ["it", "hr"]])
@pytest.mark.parametrize("top_k", [1, 3])
async def test_the_tool_returns_the_same_output(
    knowledge_bases: tuple[list, list], subset: list[str] | None, top_k: int
) -> None:
    their, our = await tools(knowledge_bases, mode="agentic", top_k=top_k)
    arguments = {"query": ""} if subset is None else {"knowledge_bases": subset}
    for question in QUESTIONS:
        arguments["query"] = question
        their_chunk = await their.call(**arguments)
        our_chunk = await our(**arguments)
        assert plain(our_chunk.content) == plain(their_chunk.content), question
        assert (our_chunk.state, our_chunk.is_last) == (their_chunk.state, their_chunk.is_last)


async def test_an_empty_subset_searches_nothing(knowledge_bases: tuple[list, list]) -> None:
    """``knowledge_bases=[]`` names no base: nothing is searched (omitted or null: all)."""
    their, our = await tools(knowledge_bases, mode="agentic")
    their_chunk = await their.call(query=QUESTIONS[0], knowledge_bases=[])
    our_chunk = await our(query=QUESTIONS[0], knowledge_bases=[])
    assert plain(our_chunk.content) == plain(their_chunk.content)


async def test_the_tool_through_both_agents(knowledge_bases: tuple[list, list]) -> None:
    """The model calls search_knowledge; the tool result it reads next is the same."""
    their_search, our_search = await tools(knowledge_bases, mode="agentic", top_k=2)
    arguments = json.dumps({"query": QUESTIONS[0]})
    their_model_ = ScriptedModel(
        [
            their_model.ChatResponse(
                content=[
                    their_message.ToolCallBlock(id="c1", name="search_knowledge", input=arguments)
                ],
                is_last=True,
            ),
            their_model.ChatResponse(
                content=[their_message.TextBlock(text="25 days.")], is_last=True
            ),
        ]
    )
    their_agent_ = their_agent.Agent(
        name="helper",
        system_prompt="Search when needed.",
        model=their_model_,
        toolkit=their_tool.Toolkit(tools=[their_search]),
    )
    await their_agent_.reply(
        their_message.Msg(
            name="user", content=[their_message.TextBlock(text=QUESTIONS[0])], role="user"
        )
    )
    our_model = ScriptedChatModel(
        [
            ChatResponse(
                content=[
                    our_message.ToolCallBlock(id="c1", name="search_knowledge", input=arguments)
                ]
            ),
            "25 days.",
        ]
    )
    our_agent = Agent(
        name="helper",
        system_prompt="Search when needed.",
        model=our_model,
        toolkit=Toolkit([our_search]),
    )
    await our_agent.reply(our_message.Msg("user", QUESTIONS[0], "user"))

    [their_result] = [
        block
        for message in their_model_.calls[1]
        for block in message.content
        if isinstance(block, their_message.ToolResultBlock)
    ]
    [our_result] = [
        block
        for message in our_model.calls[1].messages
        for block in message.content
        if isinstance(block, our_message.ToolResultBlock)
    ]
    assert plain(our_result.output) == plain(their_result.output)
    assert "[1] (source: pto.md)" in our_result.output[0].text


async def static_hints(kbs: tuple[list, list], question: str, top_k: int) -> tuple[Any, Any]:
    """The knowledge-base hint each side's model received, or None."""
    their_kbs, our_kbs = kbs
    their_mw = their_middleware.RAGMiddleware(
        their_kbs,
        parameters=their_middleware.RAGMiddleware.Parameters(mode="static", top_k=top_k),
    )
    their_model_ = ScriptedModel(
        [their_model.ChatResponse(content=[their_message.TextBlock(text="ok")], is_last=True)]
    )
    their_agent_ = their_agent.Agent(
        name="helper", system_prompt="Answer.", model=their_model_, middlewares=[their_mw]
    )
    await their_agent_.reply(
        their_message.Msg(
            name="user", content=[their_message.TextBlock(text=question)], role="user"
        )
    )
    source = json.dumps({"label": "KnowledgeBase", "sublabel": ""})
    their_hints = [
        block
        for message in their_model_.calls[0]
        for block in message.content
        if isinstance(block, their_message.HintBlock) and block.source == source
    ]

    our_mw = RAGMiddleware(our_kbs, parameters=RAGMiddleware.Parameters(mode="static", top_k=top_k))
    our_model = ScriptedChatModel(["ok"])
    our_agent = Agent(name="helper", system_prompt="Answer.", model=our_model, middlewares=[our_mw])
    await our_agent.reply(our_message.Msg("user", question, "user"))
    our_hints = [
        block
        for message in our_model.calls[0].messages
        for block in message.content
        if isinstance(block, our_message.HintBlock)
    ]
    assert len(their_hints) <= 1 and len(our_hints) <= 1
    return (their_hints or [None])[0], (our_hints or [None])[0]


@pytest.mark.parametrize("question", QUESTIONS)
@pytest.mark.parametrize("top_k", [1, 3])
async def test_the_static_hint_carries_the_same_passages(
    knowledge_bases: tuple[list, list], question: str, top_k: int
) -> None:
    """The hint is the same text, AgentScope's lead-in and the same passages. README row:
    static-mode queries (one query per message, never thinking or tool blocks)."""
    their_hint, our_hint = await static_hints(knowledge_bases, question, top_k)
    assert (their_hint is None) == (our_hint is None)
    if their_hint is None:
        return
    assert our_hint.hint == their_hint.hint
    assert our_hint.hint.startswith("<system-reminder>The following content is retrieved")


async def test_the_static_hint_has_the_same_source(knowledge_bases: tuple[list, list]) -> None:
    their_hint, our_hint = await static_hints(knowledge_bases, QUESTIONS[0], 3)
    assert our_hint.source == their_hint.source


@pytest.mark.parametrize(
    "ids",
    [["c3", "c1"], ["c2", "c2", "c99", "c4"], [], ["c4", "c3", "c2", "c1"]],
    ids=str,
)
async def test_reranking_keeps_the_same_hits(knowledge_bases: tuple[list, list], ids: list) -> None:
    """Both rerank models answer the same ids and read the same request: AgentScope's
    instruction, then the same candidate blocks. The tool returns the same hits."""
    their_kbs, our_kbs = knowledge_bases
    their_reranker = ScriptedModel([], structured=[{"ids": ids}])
    our_reranker = ScriptedChatModel([json.dumps({"ids": ids})])
    parameters: dict[str, Any] = {"mode": "agentic", "top_k": 2, "rerank_candidate_k": 4}
    their_mw = their_middleware.RAGMiddleware(
        their_kbs,
        parameters=their_middleware.RAGMiddleware.Parameters(**parameters),
        rerank_model=their_reranker,
    )
    our_mw = RAGMiddleware(
        our_kbs, parameters=RAGMiddleware.Parameters(**parameters), rerank_model=our_reranker
    )
    [their_search] = await their_mw.list_tools()
    [our_search] = await our_mw.list_tools()

    their_chunk = await their_search.call(query=QUESTIONS[1])
    our_chunk = await our_search(query=QUESTIONS[1])

    assert plain(our_chunk.content) == plain(their_chunk.content)
    [their_request] = their_reranker.calls
    [our_request] = our_reranker.calls

    def texts(messages: list[Any]) -> list[str]:
        return [getattr(b, "text", "") for m in messages for b in m.content]

    # Ours asks for the answer's JSON Schema in a text block of its own (any chat model
    # can follow it); AgentScope's model API takes the schema beside the messages.
    *our_texts, our_schema = texts(our_request.messages)
    assert our_texts == texts(their_request)
    assert our_texts[0].startswith("<rerank-task>\nRank the candidates")
    assert len([t for t in our_texts if t.startswith("<candidate ")]) == 4
    their_answer = their_middleware._rag._RerankOutput.model_json_schema()
    assert json.dumps(their_answer["properties"]["ids"]["description"]) in our_schema
