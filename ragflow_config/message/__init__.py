"""Message content blocks, and the messages an agent exchanges with its model."""

from ._blocks import Base64Source, ContentBlock, DataBlock, TextBlock, URLSource
from ._msg import (
    AssistantMsg,
    HintBlock,
    Msg,
    MsgBlock,
    Role,
    SystemMsg,
    ThinkingBlock,
    ToolCallBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
    Usage,
    UserMsg,
)

__all__ = [
    "AssistantMsg",
    "Base64Source",
    "ContentBlock",
    "DataBlock",
    "HintBlock",
    "Msg",
    "MsgBlock",
    "Role",
    "SystemMsg",
    "TextBlock",
    "ThinkingBlock",
    "ToolCallBlock",
    "ToolCallState",
    "ToolResultBlock",
    "ToolResultState",
    "URLSource",
    "Usage",
    "UserMsg",
]
