"""A metadata filter as a qdrant-client payload filter on ``chunk.metadata.<key>``."""

from __future__ import annotations

from typing import Any

from .._qdrant_payload import Between, payload_conditions


def payload_filter(
    models: Any,
    store_name: str,
    metadata_filter: dict[str, Any] | None,
    document_id: str | None = None,
    chunk_indexes: range | None = None,
) -> Any:
    """The points of ``document_id`` (if given), of chunks ``chunk_indexes`` (if given),
    whose metadata matches ``metadata_filter``; ``None`` when nothing narrows them."""
    conditions = [
        models.FieldCondition(
            key=condition.key,
            range=models.Range(gte=condition.gte, lt=condition.lt, lte=condition.lte),
        )
        if isinstance(condition, Between)
        else models.FieldCondition(
            key=condition.key, match=models.MatchValue(value=condition.value)
        )
        for condition in payload_conditions(store_name, metadata_filter, document_id, chunk_indexes)
    ]
    return models.Filter(must=conditions) if conditions else None
