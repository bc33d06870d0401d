"""Rerankers: reorder a search's candidates by how well each answers the query.

A knowledge base names one under ``retrieval: {rerank: {reranker: NAME}}``;
``KnowledgeBase.search`` applies it, so ``eval`` measures it.
"""

from __future__ import annotations

from ._base import RerankerBase
from ._http import HttpReranker

__all__ = ["HttpReranker", "RerankerBase"]
