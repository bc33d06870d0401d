"""Qdrant's payload-filter rules, said once for both stores that speak them: the
server's and local folder's (qdrant-client's models) and Qdrant Edge's (its own classes).

A chunk's metadata lives under ``chunk.metadata`` in a point's payload; a payload
list matches when an element does; a number is a float range, so that 4 finds 4.0
as 4.0 finds 4, except an integer past 2**53, which stays an exact match; neither
ever matches a boolean. Each store turns these conditions into its engine's objects.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from .base import Scalar, flatten_filter

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class Match:
    """The payload value at ``key`` is ``value`` (or a list holding it)."""

    key: str
    value: Scalar


@dataclass(frozen=True)
class Between:
    """The number at ``key`` is at least ``gte`` and below ``lt`` or at most ``lte``."""

    key: str
    gte: float
    lt: float | None = None
    lte: float | None = None


def payload_conditions(
    store_name: str,
    metadata_filter: dict[str, Any] | None,
    document_id: str | None = None,
    chunk_indexes: range | None = None,
) -> list[Match | Between]:
    """The points of ``document_id`` (if given), of chunks ``chunk_indexes`` (if given),
    whose metadata matches ``metadata_filter``: every condition must hold."""
    conditions: list[Match | Between] = []
    if document_id is not None:
        conditions.append(Match("document_id", document_id))
    if chunk_indexes is not None:
        conditions.append(Between("chunk.chunk_index", chunk_indexes.start, lt=chunk_indexes.stop))
    for path, value in flatten_filter(metadata_filter):
        key = metadata_key(store_name, path)
        if isinstance(value, float) or (type(value) is int and abs(value) <= 2**53):
            conditions.append(Between(key, value, lte=value))
        else:
            conditions.append(Match(key, value))
    return conditions


def metadata_key(store_name: str, path: tuple[str, ...]) -> str:
    """The payload path of a metadata key: a key with '.', '[' or the like goes in quotes."""
    parts = ["chunk", "metadata"]
    for key in path:
        if _PLAIN_KEY.match(key):
            parts.append(key)
        elif '"' in key:
            raise ValueError(f"{store_name}: a metadata_filter key cannot contain '\"'")
        else:
            parts.append(f'"{key}"')
    return ".".join(parts)
