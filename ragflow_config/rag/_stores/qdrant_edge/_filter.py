"""``metadata_filter`` and a store's own keys as a Qdrant Edge payload filter.

The rules are Qdrant's (``_stores/qdrant.py`` gives the same ones to
qdrant-client): a chunk's metadata lives under ``chunk.metadata`` in the payload;
a payload list matches when an element does; a number is a float range, so that
4 finds 4.0 as 4.0 finds 4, except an integer past 2**53, which stays an exact
match; neither ever matches a boolean.
"""

from __future__ import annotations

import re
from typing import Any

from ..base import Scalar, flatten_filter

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
METADATA = "chunk.metadata"


def payload_filter(
    edge: Any,
    metadata_filter: dict[str, Any] | None,
    document_id: str | None = None,
    chunk_indexes: range | None = None,
) -> Any:
    """The ``qdrant_edge.Filter`` (``edge`` is the module) matching all three, or ``None``."""
    conditions = []
    if document_id is not None:
        conditions.append(
            edge.FieldCondition(key="document_id", match=edge.MatchValue(document_id))
        )
    if chunk_indexes is not None:
        window = edge.RangeFloat(gte=chunk_indexes.start, lt=chunk_indexes.stop)
        conditions.append(edge.FieldCondition(key="chunk.chunk_index", range=window))
    for path, value in flatten_filter(metadata_filter):
        conditions.append(_condition(edge, metadata_key(path), value))
    return edge.Filter(must=conditions) if conditions else None


def with_condition(edge: Any, scope: Any, condition: Any) -> Any:
    """``scope`` (a filter or ``None``) narrowed by one more condition."""
    return edge.Filter(must=[*(scope.must if scope is not None else []), condition])


def metadata_key(path: tuple[str, ...]) -> str:
    """The payload path of a metadata key: a key with '.', '[' or the like goes in quotes."""
    parts = []
    for part in path:
        if _PLAIN_KEY.match(part):
            parts.append(part)
        elif '"' in part:
            raise ValueError("metadata_filter: a key cannot contain '\"' on Qdrant Edge")
        else:
            parts.append(f'"{part}"')
    return ".".join((METADATA, *parts))


def _condition(edge: Any, key: str, value: Scalar) -> Any:
    if isinstance(value, bool):
        # qdrant-edge-py 0.9 reads a Python bool as the integer 1 or 0 (it is an int), and
        # would match the number; numpy's bool is no int, and arrives as a boolean.
        import numpy  # here: validating a pipeline file imports this module, not numpy

        return edge.FieldCondition(key=key, match=edge.MatchValue(numpy.bool_(value)))
    if isinstance(value, float) or (type(value) is int and abs(value) <= 2**53):
        return edge.FieldCondition(key=key, range=edge.RangeFloat(gte=value, lte=value))
    return edge.FieldCondition(key=key, match=edge.MatchValue(value))
