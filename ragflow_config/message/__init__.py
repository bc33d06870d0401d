"""Message content blocks."""

from ._blocks import Base64Source, ContentBlock, DataBlock, TextBlock, URLSource

__all__ = ["Base64Source", "ContentBlock", "DataBlock", "TextBlock", "URLSource"]
