"""Ollama's embedding models, through its OpenAI-compatible ``/v1`` API."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from .._ollama import OLLAMA_URL, from_credential
from ..credential import OllamaCredential
from ._card import EmbeddingModelCard
from ._openai import OpenAICompatibleEmbeddingModel


class OllamaEmbeddingModel(OpenAICompatibleEmbeddingModel):
    """An embedding model served by Ollama, e.g. ``nomic-embed-text``.

    As in AgentScope, an :class:`~ragflow_config.credential.OllamaCredential`
    says where the server is: its ``host`` (``http://gpu:11434``) replaces
    ``base_url``. Without one, ``base_url`` is used (Ollama's ``/v1`` root).
    No key is sent unless the credential, or ``OLLAMA_API_KEY``, holds one (a
    server behind an authenticating proxy). ``dimensions`` is not sent by
    default: most Ollama models have one fixed size, which ``dimensions`` must
    state. Text only.
    """

    class Parameters(OpenAICompatibleEmbeddingModel.Parameters):
        base_url: str = Field(
            default=OLLAMA_URL,
            pattern=r"^https?://",
            description="Ollama's OpenAI-compatible root; requests go to {base_url}/embeddings.",
        )
        send_dimensions: bool = Field(
            default=False,
            description="Send `dimensions` in the request, for models that can shorten vectors.",
        )
        batch_size: int = Field(default=512, ge=1, description="Texts per request.")
        api_key_env: str = Field(
            default="OLLAMA_API_KEY",
            description="Environment variable holding a key, for a server behind a proxy.",
        )

    parameters: Parameters
    service_label: ClassVar[str] = "Ollama embeddings"
    #: Which models a server has is the server's business (``ollama list``): no cards, as in AgentScope.
    model_cards: ClassVar[tuple[EmbeddingModelCard, ...]] = ()

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: OllamaCredential | None = None,
        **options: Any,
    ) -> None:
        parameters, key = from_credential(credential, parameters, options)
        super().__init__(parameters, credential=key, **options)

    @property
    def host(self) -> str:
        """The Ollama server, as AgentScope's model names it: ``base_url`` without ``/v1``."""
        return self.parameters.base_url.removesuffix("/v1")
