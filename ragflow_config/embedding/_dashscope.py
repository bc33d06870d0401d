"""DashScope (Alibaba Cloud Model Studio) text embeddings, through its OpenAI-compatible mode."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from ..credential import DashScopeCredential
from ._card import EmbeddingModelCard
from ._openai import OpenAICompatibleEmbeddingModel

DASHSCOPE_COMPATIBLE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"


class DashScopeEmbeddingModel(OpenAICompatibleEmbeddingModel):
    """DashScope's text embedding models, e.g. ``text-embedding-v4``.

    The API key is ``credential``, or else read from ``api_key_env``
    (``DASHSCOPE_API_KEY``) when the model is built: a missing key raises
    :class:`~ragflow_config.credential.MissingSecretError` naming the variable
    right away, before any document is read. Outside mainland China, point
    ``base_url`` at the international endpoint
    (``https://dashscope-intl.aliyuncs.com/compatible-mode/v1``). Text only:
    the multimodal models are not served by the compatible mode.
    """

    class Parameters(OpenAICompatibleEmbeddingModel.Parameters):
        base_url: str = Field(
            default=DASHSCOPE_COMPATIBLE_URL,
            pattern=r"^https?://",
            description="The compatible-mode API root; requests go to {base_url}/embeddings.",
        )
        batch_size: int = Field(
            default=10, ge=1, description="Texts per request; DashScope's text models take 10."
        )
        api_key_env: str = Field(
            default="DASHSCOPE_API_KEY",
            description="Environment variable holding the DashScope API key.",
        )

    parameters: Parameters
    credential_type: ClassVar[type[DashScopeCredential]] = DashScopeCredential
    service_label: ClassVar[str] = "DashScope embeddings"
    # NOTICE: the cards' facts (names, labels, dimensions, context sizes) are AgentScope
    # 2.0.11's, from agentscope/embedding/_dashscope/_models/*.yaml
    # (https://github.com/agentscope-ai/agentscope, Apache License 2.0).
    # Only the text models: the compatible mode serves no multimodal one.
    model_cards: ClassVar[tuple[EmbeddingModelCard, ...]] = (
        EmbeddingModelCard(
            name="text-embedding-v3",
            label="Text Embedding v3",
            dimensions=1024,
            supported_dimensions=[1024, 768, 512, 256, 128, 64],
            context_size=8192,
        ),
        EmbeddingModelCard(
            name="text-embedding-v4",
            label="Text Embedding v4",
            dimensions=1024,
            supported_dimensions=[2048, 1536, 1024, 768, 512, 256, 128, 64],
            context_size=8192,
        ),
    )
