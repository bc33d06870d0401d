"""A minimal agent: the host that runs middlewares such as ``RAGMiddleware``."""

from ..event import AgentEvent, HintBlockEvent
from ._agent import Agent, EventHandler
from ._state import ReplyState

__all__ = ["Agent", "AgentEvent", "EventHandler", "HintBlockEvent", "ReplyState"]
