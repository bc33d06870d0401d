"""Static mode: what the model actually receives before, during and after retrieval."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from ragflow_config.agent import Agent, HintBlockEvent
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import (
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ToolCallBlock,
    ToolResultBlock,
)
from ragflow_config.middleware import HookStream, MiddlewareBase, NextHandler, RAGMiddleware
from ragflow_config.model import ChatResponse, ScriptedChatModel
from ragflow_config.rag import KnowledgeBase, QdrantStore
from ragflow_config.tool import ToolBase, Toolkit

from .conftest import MakeKB

PTO_HINT = (
    "<system-reminder>The following content is retrieved from the knowledge base(s) and may "
    "be helpful for the current request:\n<content>[1] (source: pto.md)\n"
    "Employees receive 25 days of paid time off per year.</content></system-reminder>"
)


class ClockTool(ToolBase):
    """A second reasoning step needs a tool call; this is the smallest real tool."""

    name = "clock"
    description = "The current time."
    input_schema: dict[str, Any] = {"type": "object", "properties": {}}

    async def call(self, **arguments: Any) -> list[TextBlock | DataBlock]:
        return [TextBlock(text="09:00")]


def clock_call() -> ChatResponse:
    return ChatResponse(content=[ToolCallBlock(id="call_clock", name="clock", input="{}")])


def hints(messages: list[Msg]) -> list[HintBlock]:
    return [block for m in messages for block in m.content if isinstance(block, HintBlock)]


def static(kb: KnowledgeBase, **parameters: Any) -> RAGMiddleware:
    return RAGMiddleware(
        knowledge_bases=[kb], parameters=RAGMiddleware.Parameters(mode="static", **parameters)
    )


async def test_hint_reaches_the_first_step_only_and_is_removed_after_it(hr_kb: KnowledgeBase):
    model = ScriptedChatModel([clock_call(), "You get 25 days."])
    agent = Agent(
        "hr-bot",
        "Answer from the material.",
        model,
        Toolkit([ClockTool()]),
        [static(hr_kb, top_k=1)],
    )

    answer = await agent.reply(Msg("alice", "How many days of paid time off do I get?", "user"))

    assert answer.text == "You get 25 days."
    first, second = model.calls
    assert [(m.role, m.name) for m in first.messages] == [
        ("system", "system"),
        ("user", "alice"),
        ("assistant", "hr-bot"),  # the reply's own message, as AgentScope; sent as a user turn
    ]
    [hint] = hints(first.messages)
    assert hint.hint == PTO_HINT
    assert hint.source == '{"label": "KnowledgeBase", "sublabel": ""}'  # as AgentScope's
    # The second step sees the tool round trip but no hint, and neither does the memory.
    assert hints(second.messages) == []
    assert isinstance(second.messages[-1].content[0], ToolResultBlock)
    assert hints(agent.context) == []
    assert all(message.content for message in agent.context)  # no emptied carrier left behind


async def test_every_reply_retrieves_again_for_its_own_input(hr_kb: KnowledgeBase):
    model = ScriptedChatModel(["25 days.", "Within 30 days."])
    agent = Agent("hr-bot", "", model, middlewares=[static(hr_kb, top_k=1)])

    await agent.reply(Msg("alice", "How many days of paid time off?", "user"))
    await agent.reply(Msg("alice", "When are travel expenses reimbursed?", "user"))

    second_hints = hints(model.calls[1].messages)
    assert len(second_hints) == 1
    assert "(source: expenses.md)" in str(second_hints[0].hint)
    assert "pto.md" not in str(second_hints[0].hint)


async def test_persist_hint_keeps_it_for_later_steps_and_replies(hr_kb: KnowledgeBase):
    model = ScriptedChatModel([clock_call(), "25 days.", "Within 30 days."])
    agent = Agent(
        "hr-bot", "", model, Toolkit([ClockTool()]), [static(hr_kb, top_k=1, persist_hint=True)]
    )

    await agent.reply(Msg("alice", "How many days of paid time off?", "user"))
    await agent.reply(Msg("alice", "When are travel expenses reimbursed?", "user"))

    assert [hint.hint for hint in hints(model.calls[1].messages)] == [PTO_HINT]
    later = [str(hint.hint) for hint in hints(model.calls[2].messages)]
    assert len(later) == 2
    assert "pto.md" in later[0]
    assert "expenses.md" in later[1]
    assert len(hints(agent.context)) == 2


async def test_hint_event_is_emitted_only_when_asked(hr_kb: KnowledgeBase):
    events: list[HintBlockEvent] = []
    model = ScriptedChatModel(["25 days.", "25 days."])
    question = Msg("alice", "How many days of paid time off?", "user")

    await Agent("a", "", model, middlewares=[static(hr_kb, top_k=1)]).reply(
        question, on_event=events.append
    )
    await Agent("b", "", model, middlewares=[static(hr_kb, top_k=1, emit_hint_event=False)]).reply(
        question, on_event=events.append
    )

    [event] = events
    [hint] = hints(model.calls[0].messages)
    assert isinstance(event, HintBlockEvent)
    assert (event.type, event.block_id, event.source, event.hint) == (
        "HINT_BLOCK",
        hint.id,
        hint.source,
        PTO_HINT,
    )


async def test_the_hint_event_comes_before_the_step_it_is_for(hr_kb: KnowledgeBase):
    model = ScriptedChatModel(["25 days."])
    model_calls_at_event: list[int] = []
    agent = Agent("a", "", model, middlewares=[static(hr_kb, top_k=1)])

    await agent.reply(
        Msg("alice", "How many days of paid time off?", "user"),
        on_event=lambda event: model_calls_at_event.append(len(model.calls)),
    )

    assert model_calls_at_event == [0]  # a frontend shows the snippets while the model works


async def test_queries_are_text_and_data_blocks_never_tool_or_hint_blocks(make_kb: MakeKB):
    class RecordingHashing(HashingEmbeddingModel):
        seen: list[str]

        async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
            self.seen.extend(item for item in batch if isinstance(item, str))
            return await super().embed_batch(batch)

    embedder = RecordingHashing(dimensions=64)
    embedder.seen = []
    kb = await make_kb(
        "hr", {"pto.md": "Employees receive 25 days of paid time off."}, embedding_model=embedder
    )
    embedder.seen.clear()  # forget what indexing embedded
    forwarded = Msg(
        "planner",
        [
            TextBlock(text="   "),
            TextBlock(text="Paid time off days?"),
            ToolCallBlock(id="c1", name="lookup", input='{"secret": "tool arguments"}'),
            ToolResultBlock(id="c1", name="lookup", output=[TextBlock(text="tool output")]),
            HintBlock(hint="an earlier hint"),
            TextBlock(text="For 2024."),
            DataBlock.from_bytes(b"\x89PNG", "image/png"),
        ],
        "assistant",
    )
    model = ScriptedChatModel(["25 days."])

    await Agent("hr-bot", "", model, middlewares=[static(kb, top_k=1)]).reply(forwarded)

    # One text query per message; the image is dropped by the text-only model, not sent.
    assert embedder.seen == ["planner: Paid time off days?\nFor 2024."]
    assert len(hints(model.calls[0].messages)) == 2  # the forwarded hint and the new one


async def test_no_hit_means_no_hint(hr_kb: KnowledgeBase):
    model = ScriptedChatModel(["I do not know."])
    agent = Agent("hr-bot", "", model, middlewares=[static(hr_kb, score_threshold=0.99)])

    await agent.reply(Msg("alice", "Who won the football match?", "user"))

    assert [m.role for m in model.calls[0].messages] == ["user"]


async def test_a_failed_search_is_logged_and_the_reply_goes_on(
    caplog: pytest.LogCaptureFixture,
):
    closed = QdrantStore(location=":memory:")  # never entered: every call fails
    kb = KnowledgeBase("hr", "HR", HashingEmbeddingModel(dimensions=64), closed, "hr")
    model = ScriptedChatModel(["Answer without context."])
    agent = Agent("hr-bot", "", model, middlewares=[static(kb)])

    with caplog.at_level(logging.ERROR, logger="ragflow_config.middleware.rag"):
        answer = await agent.reply(Msg("alice", "Paid time off?", "user"))

    assert answer.text == "Answer without context."
    assert hints(model.calls[0].messages) == []
    assert "static retrieval failed" in caplog.text


async def test_custom_template_keeps_literal_braces(hr_kb: KnowledgeBase):
    model = ScriptedChatModel(["ok"])
    template = '{{"retrieved": true}}\n{context}\n{{end}}'
    await Agent("a", "", model, middlewares=[static(hr_kb, top_k=1, hint_template=template)]).reply(
        Msg("alice", "paid time off days", "user")
    )

    [hint] = hints(model.calls[0].messages)
    assert hint.hint == (
        '{"retrieved": true}\n[1] (source: pto.md)\n'
        "Employees receive 25 days of paid time off per year.\n{end}"
    )


class GatedModel(ScriptedChatModel):
    """Answers only once every agent sharing the gate is inside its model call."""

    def __init__(self, gate: dict[str, Any], answer: str) -> None:
        super().__init__([answer])
        self._gate = gate

    async def __call__(self, messages: list[Msg], tools: Any = None) -> ChatResponse:
        response = await super().__call__(messages, tools)
        self._gate["waiting"] -= 1
        if self._gate["waiting"] == 0:
            self._gate["open"].set()
        await self._gate["open"].wait()
        return response


class GateBeforeReasoning(MiddlewareBase):
    """Holds every reply between its start and its first step until all have started."""

    def __init__(self, replies: int) -> None:
        super().__init__()
        self.waiting = replies
        self.open = asyncio.Event()

    async def on_reasoning(
        self, agent: Agent, input_kwargs: dict[str, Any], next_handler: NextHandler
    ) -> HookStream:
        self.waiting -= 1
        if self.waiting == 0:
            self.open.set()
        await self.open.wait()
        async for item in next_handler(**input_kwargs):
            yield item


async def test_one_instance_serves_concurrent_replies_without_mixing_queries(
    hr_kb: KnowledgeBase, it_kb: KnowledgeBase
):
    shared = RAGMiddleware([hr_kb, it_kb], RAGMiddleware.Parameters(mode="static", top_k=1))
    gate: dict[str, Any] = {"waiting": 2, "open": asyncio.Event()}
    hr_model, it_model = GatedModel(gate, "hr answer"), GatedModel(gate, "it answer")
    # Both replies have noted their queries before either searches (AgentScope's §9.13 race).
    both_started = GateBeforeReasoning(2)
    hr_agent = Agent("hr", "", hr_model, middlewares=[both_started, shared])
    it_agent = Agent("it", "", it_model, middlewares=[both_started, shared])

    await asyncio.gather(
        hr_agent.reply(Msg("alice", "How many days of paid time off per year?", "user")),
        it_agent.reply(Msg("bob", "Must laptops use disk encryption?", "user")),
    )

    assert "(source: pto.md)" in json.dumps(hints(hr_model.calls[0].messages)[0].hint)
    assert "(source: laptop.md)" in json.dumps(hints(it_model.calls[0].messages)[0].hint)
