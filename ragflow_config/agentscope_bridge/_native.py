"""The AgentScope subclasses; importing this module imports AgentScope."""

from __future__ import annotations

import logging
from typing import Any

from .._extras import require
from ..message import DataBlock, TextBlock
from ..rag import Chunk, KnowledgeBase

_rag = require("agentscope.rag", "agentscope")
_message = require("agentscope.message", "agentscope")

logger = logging.getLogger("ragflow_config.agentscope_bridge")


class BridgedKnowledgeBase(_rag.KnowledgeBase):  # type: ignore[name-defined]
    """AgentScope's knowledge base handle over one of ours.

    ``name``, ``description``, ``collection`` and ``metadata_filter`` are
    ours; ``embedding_model`` and ``vector_store`` are our objects. Every
    operation converts AgentScope's blocks and chunks to ours, runs on our
    knowledge base (so within its ``metadata_filter`` scope, with its
    retrieval settings) and converts the results back.
    """

    def __init__(self, ours: KnowledgeBase) -> None:
        super().__init__(
            name=ours.name,
            description=ours.description,
            embedding_model=ours.embedding_model,
            vector_store=ours.vector_store,
            collection=ours.collection,
            metadata_filter=ours.metadata_filter,
        )
        self._ours = ours

    @property
    def ragflow_knowledge_base(self) -> KnowledgeBase:
        """The ragflow_config knowledge base this handle runs on."""
        return self._ours

    async def ensure_collection(self) -> None:
        await self._ours.ensure_collection()

    async def search(
        self,
        queries: list[Any],
        top_k: int = 5,
        score_threshold: float | None = None,
    ) -> list[Any]:
        converted = [q for q in map(_query, queries) if q is not None]
        if not converted:
            return []
        hits = await self._ours.search(converted, top_k=top_k, score_threshold=score_threshold)
        return [_rag.VectorSearchResult.model_validate(hit.model_dump()) for hit in hits]

    async def insert_document(
        self,
        chunks: list[Any],
        document_id: str | None = None,
        document_metadata: dict[str, Any] | None = None,
    ) -> str:
        return await self._ours.insert_document(
            [Chunk.model_validate(chunk.model_dump()) for chunk in chunks],
            document_id=document_id,
            document_metadata=document_metadata,
        )

    async def delete_document(self, document_id: str) -> None:
        await self._ours.delete_document(document_id)

    async def list_documents(self) -> list[Any]:
        return [
            _rag.DocumentSummary.model_validate(summary.model_dump())
            for summary in await self._ours.list_documents()
        ]

    async def list_chunks(self, document_id: str, *, offset: int = 0, limit: int = 30) -> list[Any]:
        chunks = await self._ours.list_chunks(document_id, offset=offset, limit=limit)
        return [_rag.Chunk.model_validate(chunk.model_dump()) for chunk in chunks]


def _query(query: Any) -> str | TextBlock | DataBlock | None:
    """Ours for a query AgentScope passes; None for a block no embedding model takes."""
    if isinstance(query, str):
        return query
    if isinstance(query, _message.TextBlock):
        return TextBlock.model_validate(query.model_dump())
    if isinstance(query, _message.DataBlock):
        return DataBlock.model_validate(query.model_dump())
    logger.debug("query block of type %s dropped", type(query).__name__)
    return None
