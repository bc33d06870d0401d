"""What a tool is: a name, a description and a JSON Schema the model reads, and ``call``."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ..message import DataBlock, TextBlock


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
