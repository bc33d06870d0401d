"""The credentials of the services ragflow-config talks to."""

from __future__ import annotations

from pydantic import SecretStr
from pydantic_settings import SettingsConfigDict

from ._base import CredentialBase


class RemoteCredential(CredentialBase):
    """The bearer token of a ``ragflow-config serve`` that a ``RemoteKnowledgeBase`` reads;
    ``RAGFLOW_REMOTE_TOKEN`` (the client's side of ``RAGFLOW_SERVE_TOKEN``). Optional."""

    model_config = SettingsConfigDict(env_prefix="RAGFLOW_REMOTE_", extra="ignore", frozen=True)
    token: SecretStr | None = None


class OpenAICredential(CredentialBase):
    """API key of an OpenAI-compatible server; ``OPENAI_API_KEY``. Optional: local servers need none."""

    model_config = SettingsConfigDict(env_prefix="OPENAI_", extra="ignore", frozen=True)
    api_key: SecretStr | None = None


class DashScopeCredential(CredentialBase):
    """DashScope API key; ``DASHSCOPE_API_KEY``."""

    model_config = SettingsConfigDict(env_prefix="DASHSCOPE_", extra="ignore", frozen=True)
    api_key: SecretStr


class OllamaCredential(CredentialBase):
    """Where an Ollama server listens; ``OLLAMA_HOST`` (Ollama's own variable).

    ``api_key`` (``OLLAMA_API_KEY``) is for a server behind an authenticating
    proxy; Ollama itself needs none.
    """

    model_config = SettingsConfigDict(env_prefix="OLLAMA_", extra="ignore", frozen=True)
    host: str = "http://localhost:11434"
    api_key: SecretStr | None = None


class GeminiCredential(CredentialBase):
    """Google Gemini API key; ``GEMINI_API_KEY``."""

    model_config = SettingsConfigDict(env_prefix="GEMINI_", extra="ignore", frozen=True)
    api_key: SecretStr


class QdrantCredential(CredentialBase):
    """API key of a Qdrant server; ``QDRANT_API_KEY``. Optional."""

    model_config = SettingsConfigDict(env_prefix="QDRANT_", extra="ignore", frozen=True)
    api_key: SecretStr | None = None


class ElasticsearchCredential(CredentialBase):
    """``ELASTICSEARCH_API_KEY``, or ``ELASTICSEARCH_USERNAME`` and ``ELASTICSEARCH_PASSWORD``."""

    model_config = SettingsConfigDict(env_prefix="ELASTICSEARCH_", extra="ignore", frozen=True)
    api_key: SecretStr | None = None
    username: str | None = None
    password: SecretStr | None = None


class MongoDBCredential(CredentialBase):
    """A MongoDB connection string (it usually embeds a password); ``MONGODB_URI``."""

    model_config = SettingsConfigDict(env_prefix="MONGODB_", extra="ignore", frozen=True)
    uri: SecretStr


class PostgresCredential(CredentialBase):
    """A PostgreSQL connection string (``postgresql://user:pass@host/db``); ``PGVECTOR_DSN``."""

    model_config = SettingsConfigDict(env_prefix="PGVECTOR_", extra="ignore", frozen=True)
    dsn: SecretStr


class MilvusCredential(CredentialBase):
    """Token of a Milvus server (``user:password`` or an API key); ``MILVUS_TOKEN``. Optional."""

    model_config = SettingsConfigDict(env_prefix="MILVUS_", extra="ignore", frozen=True)
    token: SecretStr | None = None
