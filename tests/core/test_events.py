"""``ragflow_config.event``: AgentScope's event names, tags and fields (issue 20)."""

from __future__ import annotations

from pydantic import TypeAdapter

from ragflow_config.event import (
    AgentEvent,
    EventType,
    HintBlockEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    ReplyEndEvent,
    ReplyStartEvent,
)
from ragflow_config.message import TextBlock


def test_hint_event_dumps_as_agentscope_does() -> None:
    event = HintBlockEvent(reply_id="r1", block_id="b1", source="kb", hint="context")
    dumped = event.model_dump()
    assert set(dumped) == {
        "type",
        "reply_id",
        "block_id",
        "source",
        "hint",
        "id",
        "created_at",
        "metadata",
    }
    assert dumped["type"] == EventType.HINT_BLOCK == "HINT_BLOCK"
    assert (dumped["reply_id"], dumped["block_id"], dumped["source"]) == ("r1", "b1", "kb")
    assert dumped["metadata"] == {}


def test_events_are_told_apart_by_their_type_tag() -> None:
    events = [
        ReplyStartEvent(session_id="s", reply_id="r", name="bot"),
        ModelCallStartEvent(reply_id="r", model_name="m"),
        ModelCallEndEvent(reply_id="r", input_tokens=1, output_tokens=2),
        HintBlockEvent(reply_id="r", block_id="b", hint=[TextBlock(text="x")]),
        ReplyEndEvent(session_id="s", reply_id="r"),
    ]
    adapter = TypeAdapter(AgentEvent)
    parsed = [adapter.validate_json(adapter.dump_json(event)) for event in events]
    assert [type(event) for event in parsed] == [type(event) for event in events]
    assert parsed == events
