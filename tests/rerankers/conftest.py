"""The reranker tests' live local server, and the small knowledge base they rerank."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import TextBlock
from ragflow_config.rag import (
    Chunk,
    KnowledgeBase,
    QdrantStore,
    RerankSettings,
    RetrievalSettings,
    VectorSearchResult,
)
from ragflow_config.rerankers import HttpReranker, RerankerBase

from ._server import RerankServer

TEXTS = [
    "sleep sleep sleep sleep sleep",
    "cats sleep in the sun all day",
    "the cat naps",
    "where do dogs sleep at night",
    "sleep well",
    "cats",
]
QUERY = "where do cats sleep in the day"


def text(hit: VectorSearchResult) -> str:
    content = hit.chunk.content
    assert isinstance(content, TextBlock)
    return content.text


def pets(
    store: QdrantStore, reranker: RerankerBase | None = None, candidates: int = 4
) -> KnowledgeBase:
    """The knowledge base ``store`` holds, reranked over ``candidates`` by ``reranker`` if one
    is given (named ``tei`` in its settings)."""
    rerank = RerankSettings(reranker="tei", candidates=candidates) if reranker else None
    return KnowledgeBase(
        "pets",
        "",
        HashingEmbeddingModel(dimensions=64),
        store,
        "pets",
        retrieval=RetrievalSettings(rerank=rerank),
        reranker=reranker,
    )


@pytest.fixture
def server() -> Iterator[RerankServer]:
    with RerankServer() as instance:
        yield instance


@pytest.fixture
async def tei(server: RerankServer) -> AsyncIterator[HttpReranker]:
    """An HTTP reranker on the live server, entered."""
    async with HttpReranker(base_url=server.root) as reranker:
        yield reranker


@pytest.fixture
async def store() -> AsyncIterator[QdrantStore]:
    """Qdrant in memory holding ``TEXTS`` in the collection ``pets``, one chunk a file."""
    async with QdrantStore(location=":memory:") as opened:
        await pets(opened).insert_document(
            [
                Chunk(content=TextBlock(text=t), source=f"{i}.txt", chunk_index=0, total_chunks=1)
                for i, t in enumerate(TEXTS)
            ],
            document_id="all",
        )
        yield opened
