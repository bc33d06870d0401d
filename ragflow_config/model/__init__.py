"""Chat models: the agent's reasoning engine and the reranker of retrieval results."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports
from ._base import ChatModelBase, ChatModelParameters, ChatResponse

if TYPE_CHECKING:
    from ._dashscope import DashScopeChatModel
    from ._ollama import OllamaChatModel
    from ._openai import OpenAIChatModel, OpenAICompatibleChatModel
    from ._scripted import ScriptedCall, ScriptedChatModel

# Each model imported on first use: the RAG middleware needs the base class only,
# and a pipeline without a chat model should not load DashScope's or OpenAI's client.
__getattr__ = lazy_exports(
    __name__,
    {
        "DashScopeChatModel": "._dashscope",
        "OllamaChatModel": "._ollama",
        "OpenAIChatModel": "._openai",
        "OpenAICompatibleChatModel": "._openai",
        "ScriptedCall": "._scripted",
        "ScriptedChatModel": "._scripted",
    },
)

__all__ = [
    "ChatModelBase",
    "ChatModelParameters",
    "ChatResponse",
    "DashScopeChatModel",
    "OllamaChatModel",
    "OpenAIChatModel",
    "OpenAICompatibleChatModel",
    "ScriptedCall",
    "ScriptedChatModel",
]
