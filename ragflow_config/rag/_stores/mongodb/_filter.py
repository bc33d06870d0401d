"""A metadata filter as MongoDB ``$match`` clauses on ``chunk.metadata.<key>``, and the
keys a vector search may filter by: those declared in the search index."""

from __future__ import annotations

from typing import Any

from ..base import flatten_filter

METADATA = "chunk.metadata."


def metadata_key_problem(path: tuple[str, ...], where: str) -> None:
    """Reject a metadata path MongoDB would read as something else."""
    for key in path:
        if not key or "." in key or key.startswith("$"):
            raise ValueError(
                f"{where}: MongoDB cannot query the metadata key {key!r} "
                "(empty, containing '.', or starting with '$')"
            )


def metadata_clauses(metadata_filter: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``metadata_filter`` as ``$eq`` clauses; ``$eq`` keeps a value like "$where" literal.

    On an array ``$eq`` matches an element equal to the value (the list meaning
    of ``metadata_filter``), in ``find`` and in ``$vectorSearch``'s filter alike.
    """
    clauses = []
    for path, value in flatten_filter(metadata_filter):
        metadata_key_problem(path, "metadata_filter")
        clauses.append({METADATA + ".".join(path): {"$eq": value}})
    return clauses


def undeclared_filter_keys(
    metadata_filter: dict[str, Any] | None, filter_fields: tuple[str, ...]
) -> list[str]:
    keys = [".".join(path) for path, _ in flatten_filter(metadata_filter)]
    return [key for key in keys if key not in filter_fields]


def match_query(
    document_id: str | None,
    metadata_filter: dict[str, Any] | None,
    *,
    chunk_range: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """A ``find``/``delete`` query: the document, a ``chunk_index`` window, the metadata."""
    clauses: list[dict[str, Any]] = []
    if document_id is not None:
        clauses.append({"document_id": {"$eq": document_id}})
    if chunk_range is not None:
        clauses.append({"chunk.chunk_index": {"$gte": chunk_range[0], "$lt": chunk_range[1]}})
    clauses.extend(metadata_clauses(metadata_filter))
    return {"$and": clauses} if clauses else {}
