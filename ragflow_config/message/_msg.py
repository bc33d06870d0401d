"""Messages between a user, an agent and its model, and the blocks only an agent uses."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, field_validator, model_validator

from ._blocks import DataBlock, TextBlock, _new_id, _now

Role = Literal["user", "assistant", "system"]
FinishedReason = Literal["completed", "interrupted", "exceed_max_iters", "error"]


class ToolCallState(str, Enum):
    """Where a tool call stands: AgentScope's states, for code that reads them."""

    PENDING = "pending"
    ASKING = "asking"
    ALLOWED = "allowed"
    SUBMITTED = "submitted"
    FINISHED = "finished"


class ToolResultState(str, Enum):
    """How a tool run ended (or that it still runs): AgentScope's states."""

    SUCCESS = "success"
    ERROR = "error"
    INTERRUPTED = "interrupted"
    DENIED = "denied"
    RUNNING = "running"


class ThinkingBlock(BaseModel):
    """A model's reasoning text, kept apart from its answer; only assistant messages carry it."""

    type: Literal["thinking"] = "thinking"
    thinking: str
    id: str = Field(default_factory=_new_id)
    created_at: str = Field(default_factory=_now)
    finished_at: str | None = None


class Usage(BaseModel):
    """Tokens one model call (or a whole reply, summed) consumed."""

    input_tokens: int
    output_tokens: int
    cache_input_tokens: int = 0
    cache_creation_input_tokens: int = 0


class HintBlock(BaseModel):
    """Context injected for the model (retrieved passages, reminders); sent as a user turn."""

    type: Literal["hint"] = "hint"
    hint: str | list[Annotated[TextBlock | DataBlock, Field(discriminator="type")]]
    source: str | None = Field(default=None, description="Who injected it, e.g. a middleware.")
    id: str = Field(default_factory=_new_id)
    created_at: str = Field(default_factory=_now)
    # A hint is whole when made, so it is finished when created (as in AgentScope).
    finished_at: str | None = Field(default_factory=_now)


class ToolCallBlock(BaseModel):
    """A model's request to run a tool; ``input`` is the JSON text as the model sent it.

    ``state`` is AgentScope's: this package's agent moves it from ``pending``
    to ``finished`` once the tool has run (it asks no permission, so never
    ``asking``, ``allowed`` or ``submitted``).
    """

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    input: str
    state: ToolCallState = ToolCallState.PENDING
    created_at: str = Field(default_factory=_now)
    finished_at: str | None = None


class ToolResultBlock(BaseModel):
    """The outcome of one tool call, matched to it by ``id``."""

    type: Literal["tool_result"] = "tool_result"
    id: str
    name: str
    output: list[Annotated[TextBlock | DataBlock, Field(discriminator="type")]]
    state: ToolResultState = ToolResultState.RUNNING
    metadata: dict[str, Any] = Field(default_factory=dict)
    created_at: str = Field(default_factory=_now)
    finished_at: str | None = None


MsgBlock = Annotated[
    TextBlock | DataBlock | ThinkingBlock | HintBlock | ToolCallBlock | ToolResultBlock,
    Field(discriminator="type"),
]

# What each role may carry; anything else is a mistake caught at construction.
_ALLOWED_BLOCKS: dict[str, tuple[type[BaseModel], ...]] = {
    "system": (TextBlock,),
    "user": (TextBlock, DataBlock, HintBlock),
    "assistant": (TextBlock, DataBlock, ThinkingBlock, HintBlock, ToolCallBlock, ToolResultBlock),
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
    created_at: str = Field(default_factory=_now)
    finished_at: str | None = None
    finished_reason: FinishedReason | None = None
    usage: Usage | None = None
    structured_output: dict[str, Any] | None = None

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

    # AgentScope's accessors, with its signatures and results.
    def get_content_blocks(self, block_type: str | list[str] | None = None) -> list[MsgBlock]:
        """The blocks of one type (``"text"``), of any of several, or all of them."""
        if block_type is None:
            return list(self.content)
        types = [block_type] if isinstance(block_type, str) else block_type
        return [block for block in self.content if block.type in types]

    def has_content_blocks(self, block_type: str | list[str] | None = None) -> bool:
        """Whether the message holds a block of that type (of any type, without one)."""
        return bool(self.get_content_blocks(block_type))

    def get_text_content(self, separator: str = "\n") -> str | None:
        """The text blocks' text joined by ``separator``; ``None`` without a text block."""
        texts = [block.text for block in self.content if isinstance(block, TextBlock)]
        return separator.join(texts) if texts else None


# AgentScope's constructors of one role's message: functions, named like classes.
def _made(
    name: str,
    content: str | list[Any],
    role: Role,
    created_at: str | None,
    finished_at: str | None,
    **fields: Any,
) -> Msg:
    created = created_at or _now()
    fields = {key: value for key, value in fields.items() if value is not None}
    return Msg(
        name, content, role, created_at=created, finished_at=finished_at or created, **fields
    )


def UserMsg(
    name: str,
    content: str | list[TextBlock | DataBlock],
    metadata: dict[str, Any] | None = None,
    created_at: str | None = None,
    finished_at: str | None = None,
    finished_reason: FinishedReason | None = None,
    id: str | None = None,
) -> Msg:
    """A user message, finished when created unless ``finished_at`` says otherwise."""
    return _made(
        name,
        content,
        "user",
        created_at,
        finished_at,
        metadata=metadata,
        finished_reason=finished_reason,
        id=id,
    )


def AssistantMsg(
    name: str,
    content: str | list[Any],
    metadata: dict[str, Any] | None = None,
    created_at: str | None = None,
    finished_at: str | None = None,
    finished_reason: FinishedReason | None = None,
    structured_output: dict[str, Any] | None = None,
    id: str | None = None,
    usage: Usage | None = None,
) -> Msg:
    """An assistant message, finished when created unless ``finished_at`` says otherwise."""
    return _made(
        name,
        content,
        "assistant",
        created_at,
        finished_at,
        metadata=metadata,
        finished_reason=finished_reason,
        structured_output=structured_output,
        id=id,
        usage=usage,
    )


def SystemMsg(
    name: str,
    content: str | list[TextBlock],
    metadata: dict[str, Any] | None = None,
    created_at: str | None = None,
    finished_at: str | None = None,
    finished_reason: FinishedReason | None = None,
    id: str | None = None,
) -> Msg:
    """A system message (text only), finished when created unless ``finished_at`` says otherwise."""
    return _made(
        name,
        content,
        "system",
        created_at,
        finished_at,
        metadata=metadata,
        finished_reason=finished_reason,
        id=id,
    )
