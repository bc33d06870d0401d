"""A metadata filter as a Milvus boolean expression, and the exact check where Milvus
cannot spell a value (a line break) and matches only approximately."""

from __future__ import annotations

import json
from typing import Any

from ..base import FilterPair, flatten_filter, matches_filter
from ._names import document_key


def expression(metadata_filter: dict[str, Any] | None, document_id: str | None = None) -> str:
    """The rows of ``document_id`` (if given) whose metadata matches ``metadata_filter``,
    near misses included where ``approximate`` says so; ``""`` for every row."""
    clauses = [_metadata_clause(pair) for pair in flatten_filter(metadata_filter)]
    clauses = [clause for clause in clauses if clause]
    if document_id is not None:
        clauses.insert(0, f'document_key == "{document_key(document_id)}"')
    return " and ".join(clauses)


def _metadata_clause(pair: FilterPair) -> str:
    path, value = pair
    # Milvus decodes JSON escapes in a key, so json.dumps quotes keys exactly.
    key = "".join(f"[{json.dumps(part, ensure_ascii=False)}]" for part in path)
    if isinstance(value, str) and _has_line_break(value):
        # A string literal cannot spell a line break (measured on Milvus Lite
        # 2.5.1: a raw one is a syntax error, no escape decodes to one, and
        # filter_params templates fail the query). LIKE, with a wildcard for
        # each, narrowed a scalar, but never looks inside a list, and 2.5.1 has
        # no ``not`` nor any test that picks out lists; so this key gets no
        # native clause, and the rows are matched exactly (``exact``).
        return ""
    # A list holding the value matches too: json_contains is true only for a
    # list (measured on 2.5.1: it keeps true apart from 1, finds no element
    # of a list inside the list, and with an integer literal misses a float
    # element, 1.0, which a float literal finds along with the integer).
    element = float(value) if _exact_float(value) else value
    return (
        f"(metadata{key} == {_literal(value)} or json_contains(metadata{key}, {_literal(element)}))"
    )


def _exact_float(value: str | int | float | bool) -> bool:
    """Whether ``value`` is an integer a float literal spells exactly."""
    return type(value) is int and abs(value) <= 2**53


def _literal(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    # A value literal decodes only \\ and \" (measured on Milvus Lite 2.5.1:
    # "\t" stays two characters).
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _has_line_break(value: str) -> bool:
    return "\n" in value or "\r" in value


def approximate(metadata_filter: dict[str, Any] | None) -> bool:
    """Whether the native expression of ``metadata_filter`` lets in near misses."""
    return any(
        isinstance(value, str) and _has_line_break(value)
        for _, value in flatten_filter(metadata_filter)
    )


def exact(entities: list[Any], metadata_filter: dict[str, Any] | None) -> list[Any]:
    """The entities (with their ``chunk``) within ``metadata_filter`` exactly."""
    if not approximate(metadata_filter):
        return entities
    return [entity for entity in entities if within(entity, metadata_filter)]


def within(entity: Any, metadata_filter: dict[str, Any] | None) -> bool:
    return matches_filter(entity["chunk"]["metadata"], metadata_filter)
