"""Google Gemini's text embedding models, through its OpenAI-compatible API."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from ..credential import GeminiCredential
from ._card import EmbeddingModelCard
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
    # NOTICE: the cards' facts (names, labels, dimensions, context sizes) are AgentScope
    # 2.0.11's, from agentscope/embedding/_gemini/_models/*.yaml
    # (https://github.com/agentscope-ai/agentscope, Apache License 2.0).
    # gemini-embedding-2 also embeds images, video, audio and PDF, but not through this class.
    model_cards: ClassVar[tuple[EmbeddingModelCard, ...]] = (
        EmbeddingModelCard(
            name="gemini-embedding-001",
            label="Gemini Embedding 001",
            dimensions=3072,
            supported_dimensions=[3072, 1536, 768, 512, 256, 128],
            context_size=2048,
        ),
        EmbeddingModelCard(
            name="gemini-embedding-2",
            label="Gemini Embedding 2",
            dimensions=3072,
            supported_dimensions=[3072, 1536, 768],
            context_size=8192,
        ),
    )
