"""Tools an agent's model can call, and the ``Toolkit`` that runs them."""

from ._base import ToolBase
from ._chunk import ToolChunk
from ._toolkit import Toolkit

__all__ = ["ToolBase", "ToolChunk", "Toolkit"]
