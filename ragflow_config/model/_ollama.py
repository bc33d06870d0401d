"""Chat models served by Ollama, through its OpenAI-compatible ``/v1`` API."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from .._ollama import OLLAMA_URL, from_credential
from ..credential import OllamaCredential
from ._openai import OpenAICompatibleChatModel


class OllamaChatModel(OpenAICompatibleChatModel):
    """A chat model served by Ollama, e.g. ``OllamaChatModel(model="qwen3")``.

    As in AgentScope, an :class:`~ragflow_config.credential.OllamaCredential`
    says where the server is: its ``host`` replaces ``base_url``. Without one,
    ``base_url`` is used. No key is sent unless the credential, or
    ``OLLAMA_API_KEY``, holds one (a server behind an authenticating proxy).
    """

    class Parameters(OpenAICompatibleChatModel.Parameters):
        base_url: str = Field(
            default=OLLAMA_URL,
            pattern=r"^https?://",
            description="Ollama's OpenAI-compatible root; requests go to {base_url}/chat/completions.",
        )
        api_key_env: str = Field(
            default="OLLAMA_API_KEY",
            description="Environment variable holding a key, for a server behind a proxy.",
        )

    parameters: Parameters
    service_label: ClassVar[str] = "Ollama chat"

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: OllamaCredential | None = None,
        **options: Any,
    ) -> None:
        parameters, key = from_credential(credential, parameters, options)
        super().__init__(parameters, credential=key, **options)
