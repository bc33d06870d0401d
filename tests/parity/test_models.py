"""The data models: the same field names, and the same required ones, as AgentScope 2.0.11."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")


SAME = [
    ("message", "TextBlock"),
    ("message", "DataBlock"),
    ("message", "HintBlock"),
    ("message", "ThinkingBlock"),
    ("message", "Base64Source"),
    ("message", "URLSource"),
    ("rag", "Section"),
    ("rag", "Chunk"),
    ("rag", "VectorSearchResult"),
    ("rag", "DocumentSummary"),
    ("event", "HintBlockEvent"),
    ("tool", "ToolChunk"),
    ("message", "ToolResultBlock"),
]
# README rows: AgentScope's fields that belong to machinery this package does not have.
WITHOUT = {
    # the permission system, whose rules a tool call suggests
    ("message", "ToolCallBlock"): {"suggested_rules"},
    # the agent's error replies (an interrupted or failed reply as a message)
    ("message", "Msg"): {"error"},
}


def fields(package: str, module: str, name: str) -> dict[str, bool]:
    model: Any = getattr(getattr(__import__(f"{package}.{module}"), module), name)
    return {field: info.is_required() for field, info in model.model_fields.items()}


@pytest.mark.parametrize(("module", "name"), SAME)
def test_fields(module: str, name: str) -> None:
    assert fields("ragflow_config", module, name) == fields("agentscope", module, name)


@pytest.mark.parametrize(("module", "name"), list(WITHOUT))
def test_fields_but_those_of_machinery_not_here(module: str, name: str) -> None:
    """README rows: tool call permissions, error replies."""
    theirs = fields("agentscope", module, name)
    assert set(theirs) >= WITHOUT[module, name]
    assert not any(theirs[field] for field in WITHOUT[module, name])  # optional there
    expected = {k: v for k, v in theirs.items() if k not in WITHOUT[module, name]}
    assert fields("ragflow_config", module, name) == expected


def test_vector_records_carry_more() -> None:
    """README row: vector records (also the ``scope`` they are keyed by, and the lexical
    side's ``terms``)."""
    theirs = fields("agentscope", "rag", "VectorRecord")
    ours = fields("ragflow_config", "rag", "VectorRecord")
    assert {k: v for k, v in ours.items() if k in theirs} == theirs
    assert set(ours) - set(theirs) <= {"scope", "terms"}
    assert not any(ours[k] for k in set(ours) - set(theirs))  # optional: AgentScope's still fit
