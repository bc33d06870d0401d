"""Messages to and from the chat/completions wire format."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from ..message import (
    DataBlock,
    HintBlock,
    Msg,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
    ToolResultBlock,
    URLSource,
)

CanRead = Callable[[DataBlock], bool]


def to_wire_messages(messages: Sequence[Msg], can_read: CanRead) -> list[dict[str, Any]]:
    """chat/completions ``messages`` for ``messages``, in order.

    A hint becomes its own user turn and a tool result its own ``tool`` turn,
    wherever they sit in a message; tool calls ride on the assistant turn
    that precedes them.
    """
    return [turn for message in messages for turn in _turns(message, can_read)]


def _turns(message: Msg, can_read: CanRead) -> list[dict[str, Any]]:
    turns: list[dict[str, Any]] = []
    parts: list[TextBlock | DataBlock] = []
    calls: list[ToolCallBlock] = []

    def flush() -> None:
        if parts or calls:
            # Only user turns may carry images on the wire.
            readable = can_read if message.role == "user" else None
            turn: dict[str, Any] = {
                "role": message.role,
                "content": _content(parts, readable) if parts else None,
            }
            if calls:
                turn["tool_calls"] = [_wire_tool_call(call) for call in calls]
            turns.append(turn)
        parts.clear()
        calls.clear()

    for block in message.content:
        if isinstance(block, HintBlock):
            flush()
            hint = [TextBlock(text=block.hint)] if isinstance(block.hint, str) else block.hint
            turns.append({"role": "user", "content": _content(hint, can_read)})
        elif isinstance(block, ToolResultBlock):
            flush()
            turns.append({"role": "tool", "tool_call_id": block.id, "content": _text(block.output)})
        elif isinstance(block, ToolCallBlock):
            calls.append(block)
        elif isinstance(block, ThinkingBlock):
            continue  # the model's own reasoning is not sent back to it
        else:
            parts.append(block)
    flush()
    return turns


def _content(blocks: Sequence[TextBlock | DataBlock], can_read: CanRead | None) -> Any:
    """A plain string when there is only text (what every server accepts), else content parts."""
    if can_read is None or not any(isinstance(b, DataBlock) and can_read(b) for b in blocks):
        return _text(blocks)
    parts: list[dict[str, Any]] = []
    for block in blocks:
        if isinstance(block, DataBlock) and can_read(block):
            parts.append({"type": "image_url", "image_url": {"url": _data_url(block)}})
        else:
            parts.append({"type": "text", "text": _text([block])})
    return parts


def _text(blocks: Sequence[TextBlock | DataBlock]) -> str:
    return "\n".join(
        block.text if isinstance(block, TextBlock) else _placeholder(block) for block in blocks
    )


def _placeholder(block: DataBlock) -> str:
    label = f" {block.name}" if block.name else ""
    return f"[{block.media_type}{label}: not shown, this conversation carries text only]"


def _data_url(block: DataBlock) -> str:
    if isinstance(block.source, URLSource):
        return str(block.source.url)
    return f"data:{block.source.media_type};base64,{block.source.data}"


def _wire_tool_call(call: ToolCallBlock) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.input},
    }


class _WireFunction(BaseModel):
    name: str
    # Some servers (older Ollama) send an object instead of a JSON string.
    arguments: str | dict[str, Any] | None = None


class _WireToolCall(BaseModel):
    id: str | None = None
    function: _WireFunction


class _WireMessage(BaseModel):
    content: str | None = None
    tool_calls: list[_WireToolCall] | None = None


class _WireChoice(BaseModel):
    message: _WireMessage


class WireResponse(BaseModel):
    """The parts of a chat/completions response body this package reads."""

    choices: list[_WireChoice] = Field(min_length=1)

    def blocks(self) -> list[TextBlock | ToolCallBlock]:
        message = self.choices[0].message
        blocks: list[TextBlock | ToolCallBlock] = []
        if message.content:
            blocks.append(TextBlock(text=message.content))
        for call in message.tool_calls or []:
            arguments = call.function.arguments
            blocks.append(
                ToolCallBlock(
                    id=call.id or f"call_{uuid.uuid4().hex}",
                    name=call.function.name,
                    input=arguments if isinstance(arguments, str) else json.dumps(arguments or {}),
                )
            )
        return blocks
