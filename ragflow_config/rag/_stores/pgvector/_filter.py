"""A metadata filter as a WHERE condition: JSON containment, served by the GIN index."""

from __future__ import annotations

from typing import Any

from .._pg_text import to_postgres
from ..base import flatten_filter


def where(
    metadata_filter: dict[str, Any] | None, document_id: str | None = None
) -> tuple[Any, dict[str, Any]]:
    """A WHERE condition and its parameters; values never enter the SQL text."""
    from psycopg import sql
    from psycopg.types.json import Jsonb

    conditions: list[Any] = []
    params: dict[str, Any] = {}
    if document_id is not None:
        conditions.append(sql.SQL("document_id = %(document_id)s"))
        params["document_id"] = to_postgres(document_id)
    # Per pair, containment of the value or of a list holding it: jsonb's @>
    # finds a scalar inside an array only at the top level, so
    # {"s": ["a", "b"]} @> {"s": "a"} is false while @> {"s": ["a"]} is true
    # (and {"s": "a"} @> {"s": ["a"]} false). Both are served by the GIN index
    # (a BitmapOr of two index scans), and jsonb keeps true apart from 1.
    for number, (path, value) in enumerate(flatten_filter(metadata_filter)):
        both = []
        for leaf, form in ((value, "value"), ([value], "list")):
            contained: dict[str, Any] = {path[-1]: leaf}
            for key in reversed(path[:-1]):
                contained = {key: contained}
            name = f"metadata_{number}_{form}"
            both.append(sql.SQL("metadata @> {}").format(sql.Placeholder(name)))
            params[name] = Jsonb(to_postgres(contained))
        conditions.append(sql.SQL("({})").format(sql.SQL(" OR ").join(both)))
    if not conditions:
        return sql.SQL("TRUE"), params
    return sql.SQL(" AND ").join(conditions), params
