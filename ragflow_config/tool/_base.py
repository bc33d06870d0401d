"""What a tool is: a name, a description and a JSON Schema the model reads, and ``call``."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from typing import Any

from ..message import DataBlock, TextBlock, ToolResultState
from ._chunk import ToolChunk

logger = logging.getLogger("ragflow_config.tool")


class ToolBase(ABC):
    """A function the model may call.

    ``input_schema`` is the JSON Schema of the keyword arguments; the
    :class:`Toolkit` validates the model's arguments against it before
    ``call`` runs. An exception raised by ``call`` becomes an error result the
    model reads, not a crash of the agent.
    """

    name: str
    description: str
    input_schema: dict[str, Any]

    @abstractmethod
    async def call(self, **arguments: Any) -> list[TextBlock | DataBlock]:
        """Run the tool and return what the model should see."""

    async def __call__(self, **arguments: Any) -> ToolChunk:
        """Run the tool directly, as AgentScope code does: ``await tool(query=...)``.

        The arguments are not checked against ``input_schema``; a
        :class:`Toolkit` does that for the model's calls.
        """
        try:
            output = await self.call(**arguments)
        except Exception as exc:
            logger.exception("tool %s failed", self.name)
            failure = TextBlock(text=f"Tool {self.name} failed: {exc}")
            return ToolChunk(content=[failure], state=ToolResultState.ERROR)
        return ToolChunk(content=output, state=ToolResultState.SUCCESS)

    def schema(self) -> dict[str, Any]:
        """The declaration sent to the model, in the chat/completions ``tools`` format."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.input_schema,
            },
        }
