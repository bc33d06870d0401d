"""A metadata filter as a Qdrant payload filter on ``chunk.metadata.<key>``."""

from __future__ import annotations

import re
from typing import Any

from ..base import flatten_filter

_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


def payload_filter(
    models: Any,
    store_name: str,
    metadata_filter: dict[str, Any] | None,
    document_id: str | None = None,
    chunk_indexes: range | None = None,
) -> Any:
    """The points of ``document_id`` (if given), of chunks ``chunk_indexes`` (if given),
    whose metadata matches ``metadata_filter``; ``None`` when nothing narrows them."""
    conditions = []
    if document_id is not None:
        conditions.append(
            models.FieldCondition(key="document_id", match=models.MatchValue(value=document_id))
        )
    if chunk_indexes is not None:
        conditions.append(
            models.FieldCondition(
                key="chunk.chunk_index",
                range=models.Range(gte=chunk_indexes.start, lt=chunk_indexes.stop),
            )
        )
    for path, value in flatten_filter(metadata_filter):
        key = "chunk.metadata." + ".".join(_key(store_name, part) for part in path)
        # A payload list matches when an element does. A number is a range
        # (f64) so that 4 finds 4.0 too, as it does the other way; an integer
        # past 2**53 stays an exact match. Neither ever matches a boolean.
        if isinstance(value, float) or (type(value) is int and abs(value) <= 2**53):
            condition = models.FieldCondition(key=key, range=models.Range(gte=value, lte=value))
        else:
            condition = models.FieldCondition(key=key, match=models.MatchValue(value=value))
        conditions.append(condition)
    return models.Filter(must=conditions) if conditions else None


def _key(store_name: str, key: str) -> str:
    """One step of a payload path: a key with '.', '[' or the like goes in quotes."""
    if _PLAIN_KEY.match(key):
        return key
    if '"' in key:
        raise ValueError(f"{store_name}: a metadata_filter key cannot contain '\"'")
    return f'"{key}"'
