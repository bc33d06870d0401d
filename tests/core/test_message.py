"""Blocks and messages carry AgentScope 2.x's fields and constructors (issue 20)."""

from __future__ import annotations

from datetime import datetime

import pytest

from ragflow_config.message import (
    AssistantMsg,
    Base64Source,
    DataBlock,
    HintBlock,
    Msg,
    SystemMsg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
    Usage,
    UserMsg,
)


def _is_timestamp(value: object) -> bool:
    return isinstance(value, str) and datetime.fromisoformat(value) is not None


@pytest.mark.parametrize(
    "block",
    [
        TextBlock(text="a"),
        DataBlock(source=Base64Source(data="aGk=", media_type="image/png")),
        ThinkingBlock(thinking="hm"),
        ToolCallBlock(id="c1", name="t", input="{}"),
        ToolResultBlock(id="c1", name="t", output=[]),
    ],
    ids=lambda block: block.type,
)
def test_blocks_are_created_now_and_not_yet_finished(block: object) -> None:
    dumped = block.model_dump()  # type: ignore[attr-defined]
    assert _is_timestamp(dumped["created_at"])
    assert dumped["finished_at"] is None


def test_a_hint_is_finished_when_created() -> None:
    dumped = HintBlock(hint="context").model_dump()
    assert _is_timestamp(dumped["created_at"])
    assert _is_timestamp(dumped["finished_at"])


def test_timestamps_survive_a_json_round_trip() -> None:
    block = TextBlock(text="a", finished_at="2026-01-01T00:00:00")
    assert TextBlock.model_validate(block.model_dump(mode="json")) == block


def test_msg_carries_reply_fields() -> None:
    usage = Usage(input_tokens=3, output_tokens=4)
    msg = Msg("bot", "hi", "assistant", usage=usage, finished_reason="completed")
    dumped = msg.model_dump()
    assert _is_timestamp(dumped["created_at"])
    assert dumped["finished_at"] is None
    assert dumped["usage"] == {
        "input_tokens": 3,
        "output_tokens": 4,
        "cache_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }
    assert dumped["finished_reason"] == "completed"
    assert dumped["structured_output"] is None


def test_role_constructors_make_finished_messages_of_their_role() -> None:
    user = UserMsg(name="alice", content="What is PTO?")
    assert (user.role, user.name, user.text) == ("user", "alice", "What is PTO?")
    assert user.finished_at == user.created_at

    answer = AssistantMsg(
        name="bot", content=[ThinkingBlock(thinking="x"), TextBlock(text="y")], id="r1"
    )
    assert (answer.role, answer.id, answer.text) == ("assistant", "r1", "y")

    system = SystemMsg(name="system", content="Be brief.", finished_at="2026-01-01T00:00:00")
    assert system.role == "system"
    assert system.finished_at == "2026-01-01T00:00:00"


def test_role_constructors_keep_the_role_rules() -> None:
    with pytest.raises(ValueError, match="user message cannot carry a thinking block"):
        UserMsg(name="alice", content=[ThinkingBlock(thinking="x")])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="system message cannot carry a data block"):
        SystemMsg(
            name="s",
            content=[DataBlock(source=Base64Source(data="aGk=", media_type="image/png"))],  # type: ignore[list-item]
        )


def test_states_are_agentscope_strings() -> None:
    assert ToolCallState.PENDING == "pending"
    assert ToolResultState.SUCCESS == "success"
    assert [state.value for state in ToolResultState] == [
        "success",
        "error",
        "interrupted",
        "denied",
        "running",
    ]
