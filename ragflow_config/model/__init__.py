"""Chat models: the agent's reasoning engine and the reranker of retrieval results."""

from ._base import ChatModelBase, ChatModelParameters, ChatResponse
from ._dashscope import DashScopeChatModel
from ._openai import OpenAICompatibleChatModel
from ._scripted import ScriptedCall, ScriptedChatModel

__all__ = [
    "ChatModelBase",
    "ChatModelParameters",
    "ChatResponse",
    "DashScopeChatModel",
    "OpenAICompatibleChatModel",
    "ScriptedCall",
    "ScriptedChatModel",
]
