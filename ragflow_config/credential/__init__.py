"""Credentials, read from the environment and never printed."""

from ._base import CredentialBase, MissingSecretError
from ._credentials import (
    DashScopeCredential,
    ElasticsearchCredential,
    GeminiCredential,
    MilvusCredential,
    MongoDBCredential,
    OllamaCredential,
    OpenAICredential,
    PostgresCredential,
    QdrantCredential,
    RemoteCredential,
)

__all__ = [
    "CredentialBase",
    "DashScopeCredential",
    "ElasticsearchCredential",
    "GeminiCredential",
    "MilvusCredential",
    "MissingSecretError",
    "MongoDBCredential",
    "OllamaCredential",
    "OpenAICredential",
    "PostgresCredential",
    "QdrantCredential",
    "RemoteCredential",
]
