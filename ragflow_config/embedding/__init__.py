"""Embedding models. Optional ones import their libraries on first use."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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
from ._hashing import HashingEmbeddingModel

if TYPE_CHECKING:
    from ._dashscope import DashScopeEmbeddingModel
    from ._gemini import GeminiEmbeddingModel
    from ._minilm import MiniLMEmbeddingModel
    from ._ollama import OllamaEmbeddingModel
    from ._openai import OpenAICompatibleEmbeddingModel, OpenAIEmbeddingModel

_LAZY = {
    "DashScopeEmbeddingModel": "._dashscope",
    "GeminiEmbeddingModel": "._gemini",
    "MiniLMEmbeddingModel": "._minilm",
    "OllamaEmbeddingModel": "._ollama",
    "OpenAICompatibleEmbeddingModel": "._openai",
    "OpenAIEmbeddingModel": "._openai",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


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
    "vectors_digest",
]
