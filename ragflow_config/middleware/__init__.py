"""Middlewares: onion-style layers around an agent's reply and reasoning steps."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from ._base import HookedAgent, HookStream, MiddlewareBase, NextHandler
from ._state import ReplyState

if TYPE_CHECKING:
    from ._rag import RAGMiddleware

# Imported on first use: it imports the knowledge base and the chat model's base.
__getattr__ = lazy_exports(__name__, {"RAGMiddleware": "._rag"})

__all__ = [
    "HookStream",
    "HookedAgent",
    "MiddlewareBase",
    "NextHandler",
    "RAGMiddleware",
    "ReplyState",
]
