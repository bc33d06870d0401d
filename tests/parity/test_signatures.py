"""Every public name that mirrors AgentScope 2.0.11's, compared signature by signature.

For each class or function that ``rag``, ``embedding``, ``model``,
``middleware``, ``message`` and ``tool`` export under the same name as
AgentScope's modules, AgentScope's constructor parameters (or Pydantic
fields), defaults, public members and their parameters are looked up on
ours. Each one missing or different is a *difference*, written as a key:

- ``rag.QdrantStore(api_key)``: a constructor parameter or field ours refuses;
- ``rag.QdrantStore(distance='Cosine')``: accepted, but another default;
- ``message.Msg.get_text_content``: a public member ours lacks;
- ``tool.Toolkit.register(group_name)``: a parameter of a member ours lacks.

Ours may have more (parameters, members). Every difference must be a key in
the "Where we differ from AgentScope, and why" table (docs/agentscope.md) in
a row that names this file, and every such key must still be a difference: a
new one fails until someone fixes it or writes down why, a fixed one until
its row goes.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")

from ragflow_config._component import Component
from ragflow_config.credential import (
    DashScopeCredential,
    GeminiCredential,
    OpenAICredential,
)

MODULES = ("rag", "embedding", "model", "middleware", "message", "tool")
TABLE = Path(__file__).resolve().parents[2] / "docs" / "agentscope.md"
TABLE_HEADING = "### Where we differ from AgentScope, and why"
# What our components need to be built at all, beside the parameter under test.
REQUIRED: dict[str, dict[str, Any]] = {
    "rag.MongoDBStore": {"uri": "mongodb://localhost:27017", "database": "kb"},
    "rag.ElasticsearchStore": {"hosts": "http://localhost:9200"},
    "embedding.OpenAIEmbeddingModel": {
        "model": "text-embedding-3-small",
        "dimensions": 8,
        "credential": OpenAICredential(api_key="sk-test"),
    },
    "embedding.DashScopeEmbeddingModel": {
        "model": "text-embedding-v4",
        "dimensions": 8,
        "credential": DashScopeCredential(api_key="sk-test"),
    },
    "embedding.OllamaEmbeddingModel": {"model": "nomic-embed-text", "dimensions": 8},
    "embedding.GeminiEmbeddingModel": {
        "model": "gemini-embedding-001",
        "dimensions": 8,
        "credential": GeminiCredential(api_key="test"),
    },
    "model.OpenAIChatModel": {
        "model": "gpt-4o-mini",
        "credential": OpenAICredential(api_key="sk-test"),
    },
    "middleware.RAGMiddleware": {"knowledge_bases": []},
    "model.DashScopeChatModel": {
        "model": "qwen-max",
        "credential": DashScopeCredential(api_key="sk-test"),
    },
    "model.OllamaChatModel": {"model": "qwen3"},
}
# AgentScope's argument of each type, where its signature has no default to try.
SAMPLES: dict[str, Any] = {"hosts": "http://localhost:9200", "uri": "mongodb://localhost:27017"}


def mirrored() -> list[tuple[str, str]]:
    pairs = []
    for module in MODULES:
        ours = importlib.import_module(f"ragflow_config.{module}")
        theirs = importlib.import_module(f"agentscope.{module}")
        pairs += [(module, name) for name in sorted(set(ours.__all__) & set(theirs.__all__))]
    return pairs


def _simple(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _parameters(function: Any) -> dict[str, inspect.Parameter] | None:
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature
        return None
    return {n: p for n, p in signature.parameters.items() if n not in ("self", "cls")}


def _takes_any_keyword(parameters: dict[str, inspect.Parameter]) -> bool:
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())


def _named(parameters: dict[str, inspect.Parameter]) -> dict[str, inspect.Parameter]:
    variadic = (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL)
    return {n: p for n, p in parameters.items() if p.kind not in variadic}


def _public_members(cls: type) -> dict[str, Any]:
    skip = set(dir(BaseModel)) if issubclass(cls, BaseModel) else set()
    members = {}
    for name in dir(cls):
        if name.startswith("_") or name in skip or name.startswith("model_"):
            continue
        value = inspect.getattr_static(cls, name)
        if isinstance(value, (staticmethod, classmethod)):
            value = value.__func__
        members[name] = value
    return members


def _field_differences(key: str, ours: type[BaseModel], theirs: type[BaseModel]) -> set[str]:
    found = set()
    for name, field in theirs.model_fields.items():
        mine = ours.model_fields.get(name)
        if mine is None or mine.is_required() != field.is_required():
            found.add(f"{key}({name})")
    return found


def _build(key: str, cls: type, **options: Any) -> Any:
    return cls(**{**REQUIRED.get(key, {}), **options})


def _constructor_differences(key: str, ours: type, theirs: type) -> set[str]:
    """AgentScope's constructor arguments that ours refuses, or defaults it sets otherwise."""
    found = set()
    mine = _parameters(ours) or {}
    for name, parameter in _named(_parameters(theirs) or {}).items():
        default = parameter.default
        if not issubclass(ours, Component):  # a plain constructor: compare signatures
            if name not in mine:
                found.add(f"{key}({name})")
            elif (
                default is not inspect.Parameter.empty
                and _simple(default)
                and mine[name].default != default
            ):
                found.add(f"{key}({name}={default!r})")
            continue
        if name in REQUIRED.get(key, {}):
            continue  # accepted by every build here
        # A component takes its options as keywords, validated by its Parameters, so
        # it is built with AgentScope's argument, and its default must change nothing.
        value = SAMPLES.get(name) if default is inspect.Parameter.empty else default
        try:
            given = _build(key, ours, **{name: value})
        except (TypeError, ValidationError):
            found.add(f"{key}({name})")
            continue
        changed = given.describe() != _build(key, ours).describe()
        if default is not inspect.Parameter.empty and changed:
            found.add(f"{key}({name}={default!r})")
    return found


def _instance(key: str, cls: type) -> Any:
    """An object of ``cls`` built from ``REQUIRED`` alone, or None where that fails."""
    try:
        return _build(key, cls)
    except Exception:  # only asked whether an attribute is set per object
        return None


def _member_differences(key: str, ours: type, theirs: type) -> set[str]:
    found = set()
    mine = _public_members(ours)
    instance = _instance(key, ours)
    for name, value in _public_members(theirs).items():
        if name not in mine:
            # An attribute ours sets per object (AgentScope's may be a property).
            if not (isinstance(value, property) and hasattr(instance, name)):
                found.add(f"{key}.{name}")
            continue
        if isinstance(value, type) and issubclass(value, BaseModel):
            if isinstance(mine[name], type) and issubclass(mine[name], BaseModel):
                found |= _field_differences(f"{key}.{name}", mine[name], value)
            continue
        if not callable(value) or not callable(mine[name]):
            continue
        their_parameters, my_parameters = _parameters(value), _parameters(mine[name])
        if their_parameters is None or my_parameters is None:
            continue
        for parameter in _named(their_parameters):
            if parameter not in my_parameters and not _takes_any_keyword(my_parameters):
                found.add(f"{key}.{name}({parameter})")
    return found


def differences(module: str, name: str) -> set[str]:
    ours = getattr(importlib.import_module(f"ragflow_config.{module}"), name)
    theirs = getattr(importlib.import_module(f"agentscope.{module}"), name)
    key = f"{module}.{name}"
    if not isinstance(theirs, type):
        mine, their_parameters = _parameters(ours), _parameters(theirs)
        if mine is None or their_parameters is None:
            return set()
        return {f"{key}({n})" for n in _named(their_parameters) if n not in mine}
    if not isinstance(ours, type):
        return {key}
    if issubclass(theirs, BaseModel) and issubclass(ours, BaseModel):
        found = _field_differences(key, ours, theirs)
    else:
        found = _constructor_differences(key, ours, theirs)
    return found | _member_differences(key, ours, theirs)


KEY = re.compile(r"`((?:" + "|".join(MODULES) + r")\.[A-Za-z_][\w.]*(?:\([^`]*\))?)`")


def explained() -> dict[str, str]:
    """Every key named in a row of the table pinned by this file, with its row's first cell."""
    text = TABLE.read_text()
    section = text.split(TABLE_HEADING, 1)[1].split("\n#", 1)[0]
    keys: dict[str, str] = {}
    for row in section.splitlines():
        if not row.startswith("|") or Path(__file__).name not in row:
            continue
        what = row.split("|")[1]
        for key in KEY.findall(what):
            keys[key] = what.strip()
    return keys


def test_there_are_names_to_compare() -> None:
    names = {name for _, name in mirrored()}
    assert {"QdrantStore", "KnowledgeBase", "RAGMiddleware", "Msg", "Toolkit"} <= names


def test_every_difference_is_a_row_of_the_table() -> None:
    found = set().union(*(differences(module, name) for module, name in mirrored()))
    rows = explained()
    unexplained = sorted(found - set(rows))
    stale = sorted(set(rows) - found)
    assert not unexplained, (
        f"differences from AgentScope 2.0.11 that no row of {TABLE.name}'s table "
        f"(pinned by {Path(__file__).name}) explains: fix them or add a row: {unexplained}"
    )
    assert not stale, f"rows of {TABLE.name}'s table name no difference any more: {stale}"
