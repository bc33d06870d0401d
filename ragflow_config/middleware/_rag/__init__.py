"""The RAG middleware and its parts: search, merge, rerank, the tool and the formats."""

from .middleware import RAGMiddleware
from .parameters import RAGParameters

__all__ = ["RAGMiddleware", "RAGParameters"]
