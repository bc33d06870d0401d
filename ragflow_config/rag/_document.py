"""The records that move between parser, chunker, embedding model and vector store."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from ..message import ContentBlock


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
    """What a vector store persists: a vector, the document it belongs to, and the chunk."""

    vector: list[float]
    document_id: str
    chunk: Chunk


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
