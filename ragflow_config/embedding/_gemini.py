"""Google Gemini's text embedding models, through its OpenAI-compatible API."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from ..credential import GeminiCredential
from ._openai import OpenAICompatibleEmbeddingModel

GEMINI_COMPATIBLE_URL = "https://generativelanguage.googleapis.com/v1beta/openai"


class GeminiEmbeddingModel(OpenAICompatibleEmbeddingModel):
    """Gemini's embedding models, e.g. ``gemini-embedding-001``.

    The API key is ``credential``, or else read from ``api_key_env``
    (``GEMINI_API_KEY``) when the model is built; a missing key raises
    :class:`~ragflow_config.credential.MissingSecretError` naming the variable.
    Text only: unlike AgentScope's, this model does not embed images, which
    Gemini's OpenAI-compatible API does not take.
    """

    class Parameters(OpenAICompatibleEmbeddingModel.Parameters):
        base_url: str = Field(
            default=GEMINI_COMPATIBLE_URL,
            pattern=r"^https?://",
            description="Gemini's OpenAI-compatible root; requests go to {base_url}/embeddings.",
        )
        batch_size: int = Field(default=100, ge=1, description="Texts per request.")
        api_key_env: str = Field(
            default="GEMINI_API_KEY", description="Environment variable holding the Gemini API key."
        )

    parameters: Parameters
    credential_type: ClassVar[type[GeminiCredential]] = GeminiCredential
    service_label: ClassVar[str] = "Gemini embeddings"
