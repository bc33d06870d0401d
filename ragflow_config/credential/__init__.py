"""Credentials, read from the environment and never printed."""

from ._base import CredentialBase, MissingSecretError
from ._credentials import (
    DashScopeCredential,
    ElasticsearchCredential,
    MilvusCredential,
    MongoDBCredential,
    OpenAICredential,
    PostgresCredential,
    QdrantCredential,
)

__all__ = [
    "CredentialBase",
    "DashScopeCredential",
    "ElasticsearchCredential",
    "MilvusCredential",
    "MissingSecretError",
    "MongoDBCredential",
    "OpenAICredential",
    "PostgresCredential",
    "QdrantCredential",
]
