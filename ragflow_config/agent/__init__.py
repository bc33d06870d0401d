"""A minimal agent: the host that runs middlewares such as ``RAGMiddleware``."""

from ._agent import Agent
from ._state import AgentEvent, EventHandler, HintBlockEvent, ReplyState

__all__ = ["Agent", "AgentEvent", "EventHandler", "HintBlockEvent", "ReplyState"]
