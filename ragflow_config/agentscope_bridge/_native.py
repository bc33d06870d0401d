"""The AgentScope subclasses; importing this module imports AgentScope."""

from __future__ import annotations

import logging
from typing import Any

from pydantic import BaseModel

from .._extras import require
from ..message import DataBlock, Msg, TextBlock
from ..model import ChatModelBase
from ..rag import Chunk, KnowledgeBase, RemoteKnowledgeBase

_rag = require("agentscope.rag", "agentscope")
_message = require("agentscope.message", "agentscope")
_model = require("agentscope.model", "agentscope")
_credential = require("agentscope.credential", "agentscope")

logger = logging.getLogger("ragflow_config.agentscope_bridge")


class BridgedKnowledgeBase(_rag.KnowledgeBase):  # type: ignore[name-defined]
    """AgentScope's knowledge base handle over one of ours.

    ``name``, ``description``, ``collection`` and ``metadata_filter`` are
    ours; ``embedding_model`` and ``vector_store`` are our objects. Every
    operation converts AgentScope's blocks and chunks to ours, runs on our
    knowledge base (so within its ``metadata_filter`` scope, with its
    retrieval settings) and converts the results back.

    Over a ``RemoteKnowledgeBase`` the handle searches and lists documents
    on its server; it has no model or store here (``None``), and writing
    through it raises ``TypeError``: a served knowledge base is read-only.
    """

    def __init__(self, ours: KnowledgeBase | RemoteKnowledgeBase) -> None:
        local = ours if isinstance(ours, KnowledgeBase) else None
        super().__init__(
            name=ours.name,
            description=ours.description,
            embedding_model=local.embedding_model if local else None,
            vector_store=local.vector_store if local else None,
            collection=local.collection if local else ours.name,
            metadata_filter=local.metadata_filter if local else None,
        )
        self._ours = ours

    @property
    def ragflow_knowledge_base(self) -> KnowledgeBase | RemoteKnowledgeBase:
        """The ragflow_config knowledge base this handle runs on."""
        return self._ours

    def _local(self, operation: str) -> KnowledgeBase:
        if isinstance(self._ours, KnowledgeBase):
            return self._ours
        raise TypeError(
            f"{operation}: {self._ours!r} is read-only: a served knowledge base is written "
            "by `ragflow-config run` on its server"
        )

    async def ensure_collection(self) -> None:
        if isinstance(self._ours, KnowledgeBase):
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
        return await self._local("insert_document").insert_document(
            [Chunk.model_validate(chunk.model_dump()) for chunk in chunks],
            document_id=document_id,
            document_metadata=document_metadata,
        )

    async def delete_document(self, document_id: str) -> None:
        await self._local("delete_document").delete_document(document_id)

    async def list_documents(self) -> list[Any]:
        return [
            _rag.DocumentSummary.model_validate(summary.model_dump())
            for summary in await self._ours.list_documents()
        ]

    async def list_chunks(self, document_id: str, *, offset: int = 0, limit: int = 30) -> list[Any]:
        local = self._local("list_chunks")
        chunks = await local.list_chunks(document_id, offset=offset, limit=limit)
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


class _BridgeCredential(_credential.CredentialBase):  # type: ignore[name-defined]
    """No credential of its own: the wrapped model has its own."""


class BridgedChatModel(_model.ChatModelBase):  # type: ignore[name-defined]
    """One of our chat models as an AgentScope chat model, for what AgentScope's
    ``RAGMiddleware`` asks of a rerank model: structured output, and plain text
    answers. Text and data blocks are passed on; tool calls are not bridged."""

    class Parameters(BaseModel):
        pass

    def __init__(self, ours: ChatModelBase) -> None:
        super().__init__(
            credential=_BridgeCredential(),
            model=ours.model_name,
            parameters=BridgedChatModel.Parameters(),
            stream=False,
            max_retries=0,
        )
        self._ours = ours

    async def _call_api(
        self, model_name: str, messages: list[Any], tools: Any = None, **kwargs: Any
    ) -> Any:
        if tools:
            raise NotImplementedError("tool calls are not bridged to ragflow_config chat models")
        response = await self._ours(_messages(messages))
        return _model.ChatResponse(content=[_message.TextBlock(text=response.text)], is_last=True)

    async def generate_structured_output(
        self, messages: list[Any], structured_model: Any, **kwargs: Any
    ) -> Any:
        if not (isinstance(structured_model, type) and issubclass(structured_model, BaseModel)):
            raise TypeError("only a pydantic model is bridged as a structured output schema")
        answer = await self._ours.generate_structured_output(_messages(messages), structured_model)
        return _model.StructuredResponse(content=answer.model_dump())


def _messages(messages: list[Any]) -> list[Msg]:
    """Ours for AgentScope's messages: their text and data blocks, by role."""
    converted = []
    for message in messages:
        blocks = [block for block in map(_query, message.content) if block is not None]
        converted.append(Msg(message.name, [_block(b) for b in blocks], message.role))
    return converted


def _block(block: str | TextBlock | DataBlock) -> TextBlock | DataBlock:
    return TextBlock(text=block) if isinstance(block, str) else block
