"""``ToolChunk``: what calling a tool directly returns, shaped as AgentScope's."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from ..message import DataBlock, TextBlock, ToolResultState
from ..message._blocks import _new_id


class ToolChunk(BaseModel):
    """A tool's output: its blocks and how the run ended.

    ``await tool(**arguments)`` returns one, with ``is_last`` true (tools here
    do not stream). An exception in the tool becomes ``state="error"`` with
    the error as text, as a :class:`~ragflow_config.tool.Toolkit` reports it.
    """

    model_config = ConfigDict(use_enum_values=True)

    content: list[Annotated[TextBlock | DataBlock, Field(discriminator="type")]]
    state: ToolResultState = ToolResultState.RUNNING
    is_last: bool = True
    metadata: dict[str, Any] = Field(default_factory=dict)
    id: str = Field(default_factory=_new_id)
