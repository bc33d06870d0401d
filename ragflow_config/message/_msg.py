"""Messages between a user, an agent and its model, and the blocks only an agent uses."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from ._blocks import DataBlock, TextBlock, _new_id

Role = Literal["user", "assistant", "system"]


class HintBlock(BaseModel):
    """Context injected for the model (retrieved passages, reminders); sent as a user turn."""

    type: Literal["hint"] = "hint"
    hint: str | list[Annotated[TextBlock | DataBlock, Field(discriminator="type")]]
    source: str | None = Field(default=None, description="Who injected it, e.g. a middleware.")
    id: str = Field(default_factory=_new_id)


class ToolCallBlock(BaseModel):
    """A model's request to run a tool; ``arguments`` is the JSON text as the model sent it."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    arguments: str = "{}"


class ToolResultBlock(BaseModel):
    """The outcome of one tool call, matched to it by ``id``."""

    type: Literal["tool_result"] = "tool_result"
    id: str
    name: str
    output: list[Annotated[TextBlock | DataBlock, Field(discriminator="type")]]
    is_error: bool = False


MsgBlock = Annotated[
    TextBlock | DataBlock | HintBlock | ToolCallBlock | ToolResultBlock,
    Field(discriminator="type"),
]

# What each role may carry; anything else is a mistake caught at construction.
_ALLOWED_BLOCKS: dict[str, tuple[type[BaseModel], ...]] = {
    "system": (TextBlock,),
    "user": (TextBlock, DataBlock, HintBlock),
    "assistant": (TextBlock, DataBlock, HintBlock, ToolCallBlock, ToolResultBlock),
}


class Msg(BaseModel):
    """One message: who sent it, in which role, and its content blocks.

    ``Msg("alice", "What is PTO?", "user")`` wraps a string in a TextBlock.
    """

    name: str
    content: list[MsgBlock]
    role: Role
    id: str = Field(default_factory=_new_id)
    metadata: dict[str, Any] = Field(default_factory=dict)

    def __init__(self, name: str, content: str | list[Any], role: Role, **data: Any) -> None:
        super().__init__(name=name, content=content, role=role, **data)

    @field_validator("content", mode="before")
    @classmethod
    def _wrap_text(cls, value: Any) -> Any:
        return [TextBlock(text=value)] if isinstance(value, str) else value

    @model_validator(mode="after")
    def _blocks_fit_role(self) -> Msg:
        allowed = _ALLOWED_BLOCKS[self.role]
        for block in self.content:
            if not isinstance(block, allowed):
                raise ValueError(f"a {self.role} message cannot carry a {block.type} block")
        return self

    @property
    def text(self) -> str:
        """The text blocks' text, one block per line."""
        return "\n".join(block.text for block in self.content if isinstance(block, TextBlock))

    @property
    def tool_calls(self) -> list[ToolCallBlock]:
        return [block for block in self.content if isinstance(block, ToolCallBlock)]
