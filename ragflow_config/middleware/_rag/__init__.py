"""The RAG middleware and its parts: search, merge, rerank, the tool and the formats."""

from typing import TYPE_CHECKING

from ..._lazy import lazy_exports
from .parameters import RAGParameters

if TYPE_CHECKING:
    from .middleware import RAGMiddleware

# The parameters alone are what `validate` checks a pipeline file's block against.
__getattr__ = lazy_exports(__name__, {"RAGMiddleware": ".middleware"})

__all__ = ["RAGMiddleware", "RAGParameters"]
