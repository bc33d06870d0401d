"""ragflow-config: knowledge bases for LLM agents as ordinary, reviewable code."""

from ._errors import (
    ChatModelError,
    CollectionMismatchError,
    ConfigError,
    ConfigIssue,
    EmbeddingError,
    MissingExtraError,
    MixedLibrariesError,
    ParserError,
    ParserFileNotFoundError,
    RagflowError,
    RemoteKnowledgeBaseError,
    UnsupportedInputError,
    VectorStoreError,
)

__version__ = "0.1.0"

__all__ = [
    "ChatModelError",
    "CollectionMismatchError",
    "ConfigError",
    "ConfigIssue",
    "EmbeddingError",
    "MissingExtraError",
    "MixedLibrariesError",
    "ParserError",
    "ParserFileNotFoundError",
    "RagflowError",
    "RemoteKnowledgeBaseError",
    "UnsupportedInputError",
    "VectorStoreError",
    "__version__",
]
