"""Comparing ragflow_config's objects with AgentScope's, field by field, ids and time stamps aside."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

# Generated per object on both sides, so never equal: left out of every comparison.
GENERATED = frozenset({"id", "created_at", "finished_at"})


def plain(value: Any) -> Any:
    """``value`` as JSON-like data without generated ids and time stamps."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items() if k not in GENERATED}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def text(section: Any) -> str:
    """The text of a section or chunk ("" for a data block)."""
    return getattr(section.content, "text", "")


def with_text(section: dict[str, Any], new: str) -> dict[str, Any]:
    """A plain section or chunk with its text replaced."""
    return {**section, "content": {**section["content"], "text": new}}
