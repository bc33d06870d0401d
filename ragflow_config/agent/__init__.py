"""A minimal agent: the host that runs middlewares such as ``RAGMiddleware``."""

from ..event import AgentEvent, HintBlockEvent
from ._agent import Agent
from ._state import EventHandler, ReplyState

__all__ = ["Agent", "AgentEvent", "EventHandler", "HintBlockEvent", "ReplyState"]
