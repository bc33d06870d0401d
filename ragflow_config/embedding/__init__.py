"""Embedding models. Optional ones import their libraries on first use."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from ._base import (
    EmbeddingInput,
    EmbeddingModelBase,
    EmbeddingParameters,
    EmbeddingResponse,
    EmbeddingUsage,
    vectors_digest,
)
from ._cache import EmbeddingCacheBase, FileEmbeddingCache
from ._card import EmbeddingModelCard
from ._counts import VectorCounts
from ._hashing import HashingEmbeddingModel

if TYPE_CHECKING:
    from ._dashscope import DashScopeEmbeddingModel
    from ._gemini import GeminiEmbeddingModel
    from ._minilm import MiniLMEmbeddingModel
    from ._ollama import OllamaEmbeddingModel
    from ._openai import OpenAICompatibleEmbeddingModel, OpenAIEmbeddingModel

__getattr__ = lazy_exports(
    __name__,
    {
        "DashScopeEmbeddingModel": "._dashscope",
        "GeminiEmbeddingModel": "._gemini",
        "MiniLMEmbeddingModel": "._minilm",
        "OllamaEmbeddingModel": "._ollama",
        "OpenAICompatibleEmbeddingModel": "._openai",
        "OpenAIEmbeddingModel": "._openai",
    },
)


__all__ = [
    "DashScopeEmbeddingModel",
    "EmbeddingCacheBase",
    "EmbeddingInput",
    "EmbeddingModelBase",
    "EmbeddingModelCard",
    "EmbeddingParameters",
    "EmbeddingResponse",
    "EmbeddingUsage",
    "FileEmbeddingCache",
    "GeminiEmbeddingModel",
    "HashingEmbeddingModel",
    "MiniLMEmbeddingModel",
    "OllamaEmbeddingModel",
    "OpenAICompatibleEmbeddingModel",
    "OpenAIEmbeddingModel",
    "VectorCounts",
    "vectors_digest",
]
