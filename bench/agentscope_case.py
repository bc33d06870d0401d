"""AgentScope 2.0.11's side of the ingest comparison: its parsers, chunker and KnowledgeBase.

AgentScope's own embedding models all call hosted APIs, so ``SharedModel``
wraps one of OUR models in AgentScope's ``EmbeddingModelBase``: both
frameworks embed with the very same code and weights. AgentScope's base class
keeps its own behaviour (it splits a call into ``batch_size`` batches and sends
them all at once with ``asyncio.gather``); each batch then goes through our
model's ``__call__``, as our ``KnowledgeBase`` would send it.

AgentScope ships no folder runner, so ``ingest`` is the loop its hosted index
worker runs per file (behaviour note 6.9): choose the parser by media type,
parse, chunk, ``insert_document`` with ``{filename, media_type, size_bytes}``.
The worker's ``delete_document`` before each insert is left out: on a fresh
collection it only finds nothing, and in Qdrant's local mode each delete scans
every point, which would slow AgentScope down for no benefit.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path
from typing import Any

from agentscope.credential import CredentialBase
from agentscope.embedding import EmbeddingModelBase, EmbeddingResponse, EmbeddingUsage
from agentscope.rag import (
    ApproxTokenChunker,
    ExcelParser,
    KnowledgeBase,
    PPTParser,
    QdrantStore,
    TextParser,
    WordParser,
)

from ragflow_config.embedding import EmbeddingModelBase as OurEmbeddingModel

mimetypes.add_type("text/markdown", ".md")


class SharedModel(EmbeddingModelBase[str]):
    """One of our embedding models, seen through AgentScope's interface."""

    def __init__(self, inner: OurEmbeddingModel) -> None:
        super().__init__(
            credential=CredentialBase(name="none: a local model"),
            model=inner.model,
            dimensions=inner.dimensions,
            parameters=None,
            context_size=512,
            batch_size=inner.batch_size,
            max_retries=0,
            retry_delay=0.0,
        )
        self._inner = inner

    async def _call_api(self, inputs: list[str], **kwargs: Any) -> EmbeddingResponse:
        response = await self._inner(inputs)
        return EmbeddingResponse(
            embeddings=response.embeddings, usage=EmbeddingUsage(time=0.0, tokens=None)
        )


def _parsers() -> list[Any]:
    return [TextParser(), WordParser(), ExcelParser(), PPTParser()]


async def ingest(
    files: list[tuple[Path, str]],
    store_path: Path,
    model: OurEmbeddingModel,
    collection: str,
    chunk_size: int,
    overlap: int,
) -> dict[str, int]:
    parsers = _parsers()
    chunker = ApproxTokenChunker(
        ApproxTokenChunker.Parameters(chunk_size=chunk_size, overlap=overlap)
    )
    chunks_written = 0
    async with QdrantStore(path=str(store_path)) as store:
        kb = KnowledgeBase(
            name="bench",
            description="benchmark corpus",
            embedding_model=SharedModel(model),
            vector_store=store,
            collection=collection,
        )
        for absolute, relative in files:
            media_type = mimetypes.guess_type(relative)[0]
            parser = next(p for p in parsers if media_type in p.supported_media_types)
            data = absolute.read_bytes()
            chunks = await chunker.chunk(await parser.parse(data, relative))
            await kb.insert_document(
                chunks,
                document_metadata={
                    "filename": relative,
                    "media_type": media_type,
                    "size_bytes": len(data),
                },
            )
            chunks_written += len(chunks)
    return {"files": len(files), "chunks": chunks_written}
