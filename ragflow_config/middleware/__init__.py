"""Middlewares: onion-style layers around an agent's reply and reasoning steps."""

from ._base import MiddlewareBase, NextHandler
from ._rag import RAGMiddleware

__all__ = ["MiddlewareBase", "NextHandler", "RAGMiddleware"]
