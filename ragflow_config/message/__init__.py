"""Message content blocks, and the messages an agent exchanges with its model."""

from ._blocks import Base64Source, ContentBlock, DataBlock, TextBlock, URLSource
from ._msg import HintBlock, Msg, MsgBlock, Role, ToolCallBlock, ToolResultBlock

__all__ = [
    "Base64Source",
    "ContentBlock",
    "DataBlock",
    "HintBlock",
    "Msg",
    "MsgBlock",
    "Role",
    "TextBlock",
    "ToolCallBlock",
    "ToolResultBlock",
    "URLSource",
]
