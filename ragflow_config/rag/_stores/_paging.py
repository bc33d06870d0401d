"""The paging every store shares: records written a batch at a time, and documents listed
from each chunk's keys."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any, TypeVar

from ..._document import DocumentSummary

if TYPE_CHECKING:
    from .base import VectorStoreBase

T = TypeVar("T")


def pages(items: list[T], size: int) -> Iterator[list[T]]:
    """``items`` in consecutive runs of ``size`` (the last may be shorter)."""
    for start in range(0, len(items), size):
        yield items[start : start + size]


async def summarize_keys(
    store: VectorStoreBase,
    collection: str,
    keys: Iterable[tuple[str, int]],
    heads: dict[str, dict[str, Any]],
    metadata_filter: dict[str, Any] | None,
) -> list[DocumentSummary]:
    """One summary per document, from every chunk's ``(document_id, chunk_index)``
    (to count them) and the chunk JSON of each document's chunk 0 (``heads``).

    So a store lists documents reading two small fields per chunk and one
    chunk per document, not every chunk's data. Source and metadata come from
    the document's lowest-indexed chunk, so a document whose chunk 0 is
    written last looks complete only once it is. One whose chunk 0 is
    missing (an interrupted write) takes source and metadata from its
    lowest-indexed chunk, read alone by the store's ``list_chunks`` within
    ``metadata_filter`` (such documents are few); one deleted in between is left out.
    """
    counts: dict[str, int] = {}
    lowest: dict[str, int] = {}
    for document_id, chunk_index in keys:
        counts[document_id] = counts.get(document_id, 0) + 1
        if chunk_index < lowest.get(document_id, chunk_index + 1):
            lowest[document_id] = chunk_index
    return await summarize(store, collection, counts, lowest, heads, metadata_filter)


async def summarize(
    store: VectorStoreBase,
    collection: str,
    counts: dict[str, int],
    lowest: dict[str, int],
    heads: dict[str, dict[str, Any]],
    metadata_filter: dict[str, Any] | None,
) -> list[DocumentSummary]:
    """One summary per document of ``counts`` (its chunk count), from the chunk JSON of
    its chunk 0 (``heads``) or, where ``lowest`` says it has none, of its lowest-indexed
    chunk, read alone; a store whose engine counts chunks itself starts here."""
    summaries = []
    for document_id, count in counts.items():
        if lowest[document_id] == 0:
            head = heads.get(document_id)
        else:
            found = await store.list_chunks(
                collection,
                document_id,
                offset=lowest[document_id],
                limit=1,
                metadata_filter=metadata_filter,
            )
            head = {"source": found[0].source, "metadata": found[0].metadata} if found else None
        if head is None:  # deleted between the reads
            continue
        summaries.append(
            DocumentSummary(
                document_id=document_id,
                source=head.get("source", ""),
                chunk_count=count,
                metadata=dict(head.get("metadata") or {}),
            )
        )
    return summaries
