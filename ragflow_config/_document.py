"""The records that move between parser, chunker, embedding model and vector store."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from pydantic import BaseModel, Field

from .message import ContentBlock


class Section(BaseModel):
    """A parser's output: one natural unit of a file (a page, a slide, a sheet, an image).

    A chunk never spans two sections.
    """

    content: ContentBlock
    source: str
    metadata: dict[str, Any] = Field(default_factory=dict)


class Chunk(BaseModel):
    """The unit that gets embedded and stored.

    ``chunk_index`` runs from 0 across the whole document and every chunk of a
    document carries the same ``total_chunks``.
    """

    content: ContentBlock
    source: str
    chunk_index: int = Field(ge=0)
    total_chunks: int = Field(ge=0)
    metadata: dict[str, Any] = Field(default_factory=dict)


class VectorRecord(BaseModel):
    """What a vector store persists: a vector, the document it belongs to, and the chunk.

    ``scope`` is the writing knowledge base's ``metadata_filter`` in canonical
    form (empty without one). It is part of the record's key, so two scopes
    sharing a collection never share a record, even under one ``document_id``.
    """

    vector: list[float]
    document_id: str
    chunk: Chunk
    scope: str = ""
    terms: dict[int, float] | None = None
    """The chunk's lexical side: BM25 document weights by term id (``_retrieval``);
    ``None`` when its knowledge base is dense only."""

    @property
    def key(self) -> str:
        """A stable 64-hex-character id for this chunk of this document in this scope."""
        return record_key(self.document_id, self.chunk.chunk_index, self.scope)


class VectorSearchResult(BaseModel):
    """One hit. A higher ``score`` is always a better match."""

    score: float
    document_id: str
    chunk: Chunk


class DocumentSummary(BaseModel):
    """One stored document: its id, source file name, chunk count and metadata."""

    document_id: str
    source: str
    chunk_count: int
    metadata: dict[str, Any] = Field(default_factory=dict)


def scope_key(metadata_filter: dict[str, Any] | None) -> str:
    """A ``metadata_filter`` in canonical form: equal filters give equal keys."""
    return (
        json.dumps(metadata_filter, sort_keys=True, separators=(",", ":"))
        if metadata_filter
        else ""
    )


def record_key(document_id: str, chunk_index: int, scope: str = "") -> str:
    """A stable 64-hex-character id for one chunk of one document in one scope.

    Unscoped records keep the id they always had (AgentScope derives it from
    ``(document_id, chunk_index)`` alone), so existing collections stay valid.
    """
    key = f"{document_id}\0{chunk_index}" if not scope else f"{scope}\0{document_id}\0{chunk_index}"
    return hashlib.sha256(key.encode()).hexdigest()
