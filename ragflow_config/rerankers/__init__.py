"""Rerankers: reorder a search's candidates by how well each answers the query.

A knowledge base names one under ``retrieval: {rerank: {reranker: NAME}}``;
``KnowledgeBase.search`` applies it, so ``eval`` measures it. ``RAGMiddleware``
takes the same components.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._base import RerankerBase
from ._cross_encoder import CrossEncoderError, CrossEncoderReranker
from ._http import HttpReranker, RerankError

if TYPE_CHECKING:
    from ._llm import LLMReranker


def __getattr__(name: str) -> Any:
    # Loaded on first use: it imports the middleware, which imports this package.
    if name != "LLMReranker":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from ._llm import LLMReranker

    globals()[name] = LLMReranker
    return LLMReranker


__all__ = [
    "CrossEncoderError",
    "CrossEncoderReranker",
    "HttpReranker",
    "LLMReranker",
    "RerankError",
    "RerankerBase",
]
