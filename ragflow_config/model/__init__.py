"""Chat models: the agent's reasoning engine and the reranker of retrieval results."""

from ._base import ChatModelBase, ChatModelParameters, ChatResponse
from ._dashscope import DashScopeChatModel
from ._ollama import OllamaChatModel
from ._openai import OpenAIChatModel, OpenAICompatibleChatModel
from ._scripted import ScriptedCall, ScriptedChatModel

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
