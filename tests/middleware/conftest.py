"""Real knowledge bases (lexical hashing embeddings, in-memory Qdrant) for middleware tests."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import pytest

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.embedding._base import EmbeddingModelBase
from ragflow_config.message import TextBlock
from ragflow_config.rag import Chunk, KnowledgeBase, QdrantStore

HR_DOCUMENTS = {
    "pto.md": "Employees receive 25 days of paid time off per year.",
    "expenses.md": "Travel expenses are reimbursed within 30 days when receipts are attached.",
    "parental.md": "Parental leave is 16 weeks of paid leave for every new parent.",
}
IT_DOCUMENTS = {
    "laptop.md": "Laptops must use full disk encryption and lock the screen after 5 minutes.",
    "vpn.md": "Connect to the VPN before opening internal dashboards from home.",
}

MakeKB = Callable[..., Awaitable[KnowledgeBase]]


@pytest.fixture
async def store() -> AsyncIterator[QdrantStore]:
    async with QdrantStore(location=":memory:") as qdrant:
        yield qdrant


@pytest.fixture
def make_kb(store: QdrantStore) -> MakeKB:
    """Build a knowledge base holding one single-chunk document per ``{source: text}`` entry."""

    async def make(
        name: str,
        documents: dict[str, str],
        *,
        description: str | None = None,
        embedding_model: EmbeddingModelBase | None = None,
        vector_store: QdrantStore | None = None,
        collection: str | None = None,
    ) -> KnowledgeBase:
        kb = KnowledgeBase(
            name=name,
            description=description or f"{name} documents",
            embedding_model=embedding_model or HashingEmbeddingModel(dimensions=64),
            vector_store=vector_store or store,
            collection=collection or name,
        )
        for source, text in documents.items():
            chunk = Chunk(
                content=TextBlock(text=text), source=source, chunk_index=0, total_chunks=1
            )
            await kb.insert_document([chunk], document_id=source)
        return kb

    return make


@pytest.fixture
async def hr_kb(make_kb: MakeKB) -> KnowledgeBase:
    return await make_kb("hr", HR_DOCUMENTS, description="HR policies: leave, pay, expenses")


@pytest.fixture
async def it_kb(make_kb: MakeKB) -> KnowledgeBase:
    return await make_kb("it", IT_DOCUMENTS, description="IT rules for laptops and remote access")
