"""Events an agent emits while it replies, named and shaped as AgentScope 2.x's ``agentscope.event``."""

from ._events import (
    AgentEvent,
    EventBase,
    EventType,
    HintBlockEvent,
    ModelCallEndEvent,
    ModelCallStartEvent,
    ReplyEndEvent,
    ReplyStartEvent,
)

__all__ = [
    "AgentEvent",
    "EventBase",
    "EventType",
    "HintBlockEvent",
    "ModelCallEndEvent",
    "ModelCallStartEvent",
    "ReplyEndEvent",
    "ReplyStartEvent",
]
