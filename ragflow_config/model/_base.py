"""The chat model interface: messages in, text and tool calls out."""

from __future__ import annotations

import contextlib
import json
import re
from abc import abstractmethod
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from pydantic import BaseModel, Field, ValidationError

from .._component import Component, ComponentParameters
from .._errors import ChatModelError
from ..message import DataBlock, Msg, TextBlock, ToolCallBlock

StructuredT = TypeVar("StructuredT", bound=BaseModel)

_FENCED = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_EXCERPT_CHARS = 200


@dataclass
class ChatResponse:
    """One model answer: text blocks and the tool calls it requests, in the model's order."""

    content: list[TextBlock | ToolCallBlock]

    @property
    def text(self) -> str:
        return "".join(block.text for block in self.content if isinstance(block, TextBlock))


class ChatModelParameters(ComponentParameters):
    """Options every chat model has."""

    vision: bool = Field(
        default=False, description="Whether the model reads images; other data is never sent."
    )


class ChatModelBase(Component):
    """A chat model. Subclasses implement ``__call__`` and ``model_name``."""

    Parameters: ClassVar[type[ComponentParameters]] = ChatModelParameters
    parameters: ChatModelParameters

    def __init__(
        self, parameters: ComponentParameters | None = None, *, stream: bool = True, **options: Any
    ) -> None:
        super().__init__(parameters, **options)
        # AgentScope's argument, taken so its code runs unchanged; answers here always come
        # whole, since what reads them (the rerank, the agent's step) needs the whole answer.
        self.stream = stream

    @property
    @abstractmethod
    def model_name(self) -> str:
        """The model's name, for logs and errors."""

    @abstractmethod
    async def __call__(
        self, messages: list[Msg], tools: list[dict[str, Any]] | None = None
    ) -> ChatResponse:
        """Answer ``messages``; ``tools`` are chat/completions function declarations."""

    def can_read(self, block: DataBlock) -> bool:
        """Whether the model understands this data; unreadable data is never sent to it."""
        return self.parameters.vision and block.media_type.startswith("image/")

    async def generate_structured_output(
        self, messages: list[Msg], structured_model: type[StructuredT]
    ) -> StructuredT:
        """Ask for one JSON object matching ``structured_model`` and parse it.

        The schema is put in the prompt rather than in a server-specific
        request field, so every chat model supports it. The answer is read
        leniently: bare JSON, JSON in a code fence, or the first matching
        object inside prose. Anything else raises :class:`ChatModelError`.
        """
        schema = json.dumps(structured_model.model_json_schema(), ensure_ascii=False)
        instruction = TextBlock(
            text="Answer with one JSON object, and nothing else, that validates against "
            f"this JSON Schema:\n{schema}"
        )
        response = await self(_with_instruction(messages, instruction))
        return self._parse_structured(response.text, structured_model)

    def _parse_structured(self, text: str, structured_model: type[StructuredT]) -> StructuredT:
        for candidate in _json_objects(text):
            try:
                return structured_model.model_validate(candidate)
            except ValidationError:
                continue
        excerpt = " ".join(text.split())[:_EXCERPT_CHARS] or "(empty answer)"
        raise ChatModelError(
            f"{self.model_name}: the answer holds no JSON object matching "
            f"{structured_model.__name__}: {excerpt}"
        )


def _with_instruction(messages: list[Msg], instruction: TextBlock) -> list[Msg]:
    """Add the instruction to the last user turn, so strict chat templates see no new turn."""
    if messages and messages[-1].role == "user":
        last = messages[-1]
        return [*messages[:-1], last.model_copy(update={"content": [*last.content, instruction]})]
    return [*messages, Msg("user", [instruction], "user")]


def _json_objects(text: str) -> list[Any]:
    """JSON objects in ``text``: the whole text, then fenced blocks, then any embedded object."""
    found: list[Any] = []
    for piece in (text, *_FENCED.findall(text)):
        with contextlib.suppress(ValueError):
            found.append(json.loads(piece))
    decoder = json.JSONDecoder()
    for start in (match.start() for match in re.finditer(r"\{", text)):
        try:
            value, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        found.append(value)
    return [value for value in found if isinstance(value, dict)]
