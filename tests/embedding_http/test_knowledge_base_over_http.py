"""A KnowledgeBase over the HTTP model: an embedding failure writes nothing."""

from __future__ import annotations

from typing import Any

import pytest

from ragflow_config._errors import EmbeddingError
from ragflow_config.embedding import OpenAICompatibleEmbeddingModel
from ragflow_config.message import TextBlock
from ragflow_config.rag import Chunk, KnowledgeBase, QdrantStore

from ._server import EmbeddingServer, Reply, error_body


def chunks(count: int) -> list[Chunk]:
    return [
        Chunk(
            content=TextBlock(text=f"paragraph {i} about cats"),
            source="cats.md",
            chunk_index=i,
            total_chunks=count,
        )
        for i in range(count)
    ]


async def test_failure_on_the_third_batch_writes_nothing(server: EmbeddingServer) -> None:
    def third_batch_fails(number: int, body: dict[str, Any]) -> Reply | None:
        # One batch at a time, so requests 0 and 1 are batches 1 and 2; all after fail.
        if number >= 2:
            return Reply(500, error_body("backend exploded"), {"Retry-After": "0"})
        return None

    server.reply = third_batch_fails
    model = OpenAICompatibleEmbeddingModel(
        base_url=server.url,
        model="m",
        dimensions=8,
        batch_size=2,
        max_concurrency=1,
        max_retries=1,
    )
    async with QdrantStore(location=":memory:") as store, model:
        knowledge = KnowledgeBase(
            name="cats",
            description="About cats.",
            embedding_model=model,
            vector_store=store,
            collection="cats",
        )
        with pytest.raises(EmbeddingError, match="backend exploded"):
            await knowledge.insert_document(chunks(6), document_metadata={"filename": "cats.md"})

        sizes = [len(seen.body["input"]) for seen in server.requests]
        assert sizes == [2, 2, 2, 2]  # batches 1 and 2 embedded; batch 3 tried twice
        assert await knowledge.list_documents() == []

        server.reply = lambda number, body: None  # the server recovers
        document_id = await knowledge.insert_document(chunks(6))
        [summary] = await knowledge.list_documents()
        assert summary.document_id == document_id
        assert summary.chunk_count == 6
