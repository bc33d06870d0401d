"""The event kinds this project's agent emits, with AgentScope's type tags and fields.

AgentScope streams many more kinds (block deltas, tool-call progress, user
confirmation); :class:`EventType` lists all of its tags, so code that
switches on them reads the same, but only the classes below are emitted here.
"""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ..message import DataBlock, TextBlock
from ..message._blocks import _new_id, _now


class EventType(str, Enum):
    """AgentScope's event type tags; a tag compares equal to its string."""

    REPLY_START = "REPLY_START"
    REPLY_END = "REPLY_END"
    MODEL_CALL_START = "MODEL_CALL_START"
    MODEL_CALL_END = "MODEL_CALL_END"
    TEXT_BLOCK_START = "TEXT_BLOCK_START"
    TEXT_BLOCK_DELTA = "TEXT_BLOCK_DELTA"
    TEXT_BLOCK_END = "TEXT_BLOCK_END"
    DATA_BLOCK_START = "DATA_BLOCK_START"
    DATA_BLOCK_DELTA = "DATA_BLOCK_DELTA"
    DATA_BLOCK_END = "DATA_BLOCK_END"
    THINKING_BLOCK_START = "THINKING_BLOCK_START"
    THINKING_BLOCK_DELTA = "THINKING_BLOCK_DELTA"
    THINKING_BLOCK_END = "THINKING_BLOCK_END"
    HINT_BLOCK = "HINT_BLOCK"
    TOOL_CALL_START = "TOOL_CALL_START"
    TOOL_CALL_DELTA = "TOOL_CALL_DELTA"
    TOOL_CALL_END = "TOOL_CALL_END"
    TOOL_RESULT_START = "TOOL_RESULT_START"
    TOOL_RESULT_TEXT_DELTA = "TOOL_RESULT_TEXT_DELTA"
    TOOL_RESULT_DATA_DELTA = "TOOL_RESULT_DATA_DELTA"
    TOOL_RESULT_END = "TOOL_RESULT_END"
    EXCEED_MAX_ITERS = "EXCEED_MAX_ITERS"
    REQUIRE_USER_CONFIRM = "REQUIRE_USER_CONFIRM"
    REQUIRE_EXTERNAL_EXECUTION = "REQUIRE_EXTERNAL_EXECUTION"
    USER_CONFIRM_RESULT = "USER_CONFIRM_RESULT"
    USER_INTERRUPT = "USER_INTERRUPT"
    EXTERNAL_EXECUTION_RESULT = "EXTERNAL_EXECUTION_RESULT"
    CUSTOM = "CUSTOM"


class EventBase(BaseModel):
    """What every event carries: an id, when it happened, free-form metadata."""

    model_config = ConfigDict(use_enum_values=True)

    id: str = Field(default_factory=_new_id)
    created_at: str = Field(default_factory=_now)
    metadata: dict[str, Any] = Field(default_factory=dict)


class ReplyStartEvent(EventBase):
    """An agent started a reply."""

    type: Literal[EventType.REPLY_START] = EventType.REPLY_START
    session_id: str
    reply_id: str
    name: str
    role: Literal["user", "assistant", "system"] = "assistant"


class ReplyEndEvent(EventBase):
    """An agent finished a reply, and why."""

    type: Literal[EventType.REPLY_END] = EventType.REPLY_END
    session_id: str
    reply_id: str
    finished_reason: Literal["completed", "interrupted", "exceed_max_iters", "error"] = "completed"


class ModelCallStartEvent(EventBase):
    """A reply called its chat model."""

    type: Literal[EventType.MODEL_CALL_START] = EventType.MODEL_CALL_START
    reply_id: str
    model_name: str


class ModelCallEndEvent(EventBase):
    """A chat model call returned; the tokens it used."""

    type: Literal[EventType.MODEL_CALL_END] = EventType.MODEL_CALL_END
    reply_id: str
    input_tokens: int
    output_tokens: int
    cache_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    finished_reason: str = "completed"


class HintBlockEvent(EventBase):
    """A hint was put into the context (retrieved passages, say) for a frontend to show.

    ``block_id`` is the :class:`~ragflow_config.message.HintBlock`'s id;
    ``source`` and ``hint`` are its fields.
    """

    type: Literal[EventType.HINT_BLOCK] = EventType.HINT_BLOCK
    reply_id: str
    block_id: str
    source: str | None = None
    hint: str | list[Annotated[TextBlock | DataBlock, Field(discriminator="type")]]


AgentEvent = Annotated[
    ReplyStartEvent | ReplyEndEvent | ModelCallStartEvent | ModelCallEndEvent | HintBlockEvent,
    Field(discriminator="type"),
]
