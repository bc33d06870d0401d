"""A minimal agent: the host that runs middlewares such as ``RAGMiddleware``."""

from ..event import AgentEvent, HintBlockEvent
from ..middleware import ReplyState
from ._agent import Agent, EventHandler

__all__ = ["Agent", "AgentEvent", "EventHandler", "HintBlockEvent", "ReplyState"]
