"""Middlewares: onion-style layers around an agent's reply and reasoning steps."""

from ._base import HookStream, MiddlewareBase, NextHandler
from ._rag import RAGMiddleware

__all__ = ["HookStream", "MiddlewareBase", "NextHandler", "RAGMiddleware"]
