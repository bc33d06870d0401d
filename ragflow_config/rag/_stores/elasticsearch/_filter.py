"""A metadata filter as Elasticsearch ``term`` queries on ``metadata_terms``: one
keyword per scalar metadata leaf, ``[path, type, value]`` as compact JSON."""

from __future__ import annotations

import json
import math
from typing import Any

from ..base import Scalar, flatten_filter


def filter_term(path: tuple[str, ...], value: Scalar) -> str:
    """The keyword that stands for ``metadata[path...] == value``.

    Numbers are compared by value (``1`` matches ``1.0``) and kept apart from
    booleans and strings, as ``matches_filter`` does.
    """
    if isinstance(value, bool):
        typed: list[Any] = ["bool", value]
    elif isinstance(value, (int, float)):
        number = int(value) if isinstance(value, float) and value.is_integer() else value
        typed = ["number", number]
    else:
        typed = ["string", value]
    return json.dumps([list(path), *typed], ensure_ascii=False, separators=(",", ":"))


def metadata_terms(metadata: dict[str, Any]) -> list[str]:
    """The filter keywords of every scalar leaf of ``metadata``.

    A list's scalar elements each stand under the list's path, so a ``term``
    query on the keyword array finds a list holding the value; a list or
    mapping inside a list is not descended into, as in ``matches_filter``.
    """
    terms: list[str] = []

    def scalar(prefix: tuple[str, ...], value: Any) -> None:
        if isinstance(value, (str, bool, int)) or (
            isinstance(value, float) and math.isfinite(value)
        ):
            terms.append(filter_term(prefix, value))

    def walk(prefix: tuple[str, ...], value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk((*prefix, str(key)), inner)
        elif isinstance(value, list):
            for element in value:
                scalar(prefix, element)
        else:
            scalar(prefix, value)

    walk((), metadata)
    return list(dict.fromkeys(terms))


def filter_clauses(metadata_filter: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``metadata_filter`` as ES ``term`` queries, all of which must match."""
    return [
        {"term": {"metadata_terms": filter_term(path, value)}}
        for path, value in flatten_filter(metadata_filter)
    ]
