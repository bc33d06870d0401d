"""Rerankers: reorder a search's candidates by how well each answers the query.

A knowledge base names one under ``retrieval: {rerank: {reranker: NAME}}``;
``KnowledgeBase.search`` applies it, so ``eval`` measures it. ``RAGMiddleware``
takes the same components.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from ._base import RerankerBase
from ._cross_encoder import CrossEncoderError, CrossEncoderReranker
from ._http import HttpReranker, RerankError

if TYPE_CHECKING:
    from ._llm import LLMReranker


# Loaded on first use: it imports the chat models' base, which a knowledge base
# without an LLM reranker never needs.
__getattr__ = lazy_exports(__name__, {"LLMReranker": "._llm"})

__all__ = [
    "CrossEncoderError",
    "CrossEncoderReranker",
    "HttpReranker",
    "LLMReranker",
    "RerankError",
    "RerankerBase",
]
