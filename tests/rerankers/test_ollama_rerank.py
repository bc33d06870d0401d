"""The LLM reranker on an Ollama chat model, against a fake Ollama server: the
model's answer, received through the ``ollama`` package, reorders the hits."""

from __future__ import annotations

from _ollama_fake import OllamaServer, chat_reply

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import TextBlock
from ragflow_config.model import OllamaChatModel
from ragflow_config.rag import (
    Chunk,
    KnowledgeBase,
    QdrantStore,
    RerankSettings,
    RetrievalSettings,
)
from ragflow_config.rerankers import LLMReranker

TEXTS = ["cats sleep all day", "cats sleep in the sun", "dogs bark"]


async def test_an_ollama_chat_model_reranks(ollama_server: OllamaServer) -> None:
    ollama_server.replies = [chat_reply('{"ids": ["c3", "c1"]}')]
    async with (
        QdrantStore(location=":memory:") as store,
        OllamaChatModel(base_url=ollama_server.host, model="qwen3") as chat,
    ):
        embedding = HashingEmbeddingModel(dimensions=64)
        plain = KnowledgeBase("pets", "pets", embedding, store, "pets")
        await plain.insert_document(
            [
                Chunk(content=TextBlock(text=t), source=f"{i}.txt", chunk_index=0, total_chunks=1)
                for i, t in enumerate(TEXTS)
            ],
            document_id="all",
        )
        retrieved = [hit.chunk.source for hit in await plain.search(["cats sleep"], top_k=3)]
        kb = KnowledgeBase(
            "pets",
            "pets",
            embedding,
            store,
            "pets",
            retrieval=RetrievalSettings(rerank=RerankSettings(reranker="llm", candidates=3)),
            reranker=LLMReranker(model=chat),
        )
        reranked = [hit.chunk.source for hit in await kb.search(["cats sleep"], top_k=3)]

    # The model's choice (c3, c1), then the candidate it left out.
    assert reranked == [retrieved[2], retrieved[0], retrieved[1]]
    [seen] = ollama_server.requests
    assert seen.path == "/api/chat"
    assert "cats sleep" in seen.body["messages"][-1]["content"]
