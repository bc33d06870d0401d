"""DashScope (Alibaba Cloud Model Studio) chat models, through its OpenAI-compatible mode."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from ..credential import DashScopeCredential
from ._openai import OpenAICompatibleChatModel

DASHSCOPE_COMPATIBLE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"


class DashScopeChatModel(OpenAICompatibleChatModel):
    """DashScope's Qwen models, e.g. ``DashScopeChatModel(model="qwen-max")``.

    The API key is ``credential``, or else read from ``api_key_env``
    (``DASHSCOPE_API_KEY``) when the model is built: a missing key raises
    :class:`~ragflow_config.credential.MissingSecretError` naming the variable
    right away. Outside mainland China, point ``base_url`` at
    ``https://dashscope-intl.aliyuncs.com/compatible-mode/v1``.
    """

    class Parameters(OpenAICompatibleChatModel.Parameters):
        base_url: str = Field(
            default=DASHSCOPE_COMPATIBLE_URL,
            pattern=r"^https?://",
            description="The compatible-mode API root; requests go to {base_url}/chat/completions.",
        )
        model: str = Field(default="qwen-max", min_length=1, description="The Qwen model's name.")
        api_key_env: str = Field(
            default="DASHSCOPE_API_KEY",
            description="Environment variable holding the DashScope API key.",
        )

    parameters: Parameters
    credential_type: ClassVar[type[DashScopeCredential]] = DashScopeCredential
    service_label: ClassVar[str] = "DashScope chat"
