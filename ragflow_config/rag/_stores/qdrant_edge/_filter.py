"""``metadata_filter`` and a store's own keys as a Qdrant Edge payload filter, by the
rules of ``_qdrant_payload``."""

from __future__ import annotations

from typing import Any

from .._qdrant_payload import Between, Match, payload_conditions


def payload_filter(
    edge: Any,
    store_name: str,
    metadata_filter: dict[str, Any] | None,
    document_id: str | None = None,
    chunk_indexes: range | None = None,
) -> Any:
    """The ``qdrant_edge.Filter`` (``edge`` is the module) matching all three, or ``None``."""
    conditions = [
        _condition(edge, condition)
        for condition in payload_conditions(store_name, metadata_filter, document_id, chunk_indexes)
    ]
    return edge.Filter(must=conditions) if conditions else None


def with_condition(edge: Any, scope: Any, condition: Any) -> Any:
    """``scope`` (a filter or ``None``) narrowed by one more condition."""
    return edge.Filter(must=[*(scope.must if scope is not None else []), condition])


def _condition(edge: Any, condition: Match | Between) -> Any:
    if isinstance(condition, Between):
        window = edge.RangeFloat(gte=condition.gte, lt=condition.lt, lte=condition.lte)
        return edge.FieldCondition(key=condition.key, range=window)
    value: Any = condition.value
    if isinstance(value, bool):
        # qdrant-edge-py 0.9 reads a Python bool as the integer 1 or 0 (it is an int), and
        # would match the number; numpy's bool is no int, and arrives as a boolean.
        import numpy  # here: validating a pipeline file imports this module, not numpy

        value = numpy.bool_(value)
    return edge.FieldCondition(key=condition.key, match=edge.MatchValue(value))
