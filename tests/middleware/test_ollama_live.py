"""Ollama for real: a knowledge base on its embeddings, and a rerank by its chat model.

Runs only against the server named by ``RAGFLOW_TEST_OLLAMA_URL`` (its root,
``http://localhost:11434``), with the models pulled: the embedding model
``RAGFLOW_TEST_OLLAMA_EMBEDDING_MODEL`` (default ``nomic-embed-text``, whose
vectors have ``RAGFLOW_TEST_OLLAMA_DIMENSIONS``, default 768, entries) and the
chat model ``RAGFLOW_TEST_OLLAMA_CHAT_MODEL`` (default ``qwen2.5:0.5b``).
Without the variable these tests skip, under CI too: no Ollama server or
model weights are installed there. tests/model and tests/embedding_http test
the same classes against local fakes at the HTTP level.
"""

from __future__ import annotations

import logging
import os

import pytest

from ragflow_config.credential import OllamaCredential
from ragflow_config.embedding import OllamaEmbeddingModel
from ragflow_config.middleware import RAGMiddleware
from ragflow_config.model import OllamaChatModel
from ragflow_config.rag import KnowledgeBase

from .conftest import HR_DOCUMENTS, MakeKB

URL = os.environ.get("RAGFLOW_TEST_OLLAMA_URL")
pytestmark = pytest.mark.skipif(
    URL is None, reason="RAGFLOW_TEST_OLLAMA_URL names no Ollama server"
)


def server() -> OllamaCredential:
    assert URL is not None
    return OllamaCredential(host=URL)


async def test_a_knowledge_base_on_ollama_embeddings_finds_the_answer(make_kb: MakeKB):
    dimensions = int(os.environ.get("RAGFLOW_TEST_OLLAMA_DIMENSIONS", "768"))
    embedding = OllamaEmbeddingModel(
        credential=server(),
        model=os.environ.get("RAGFLOW_TEST_OLLAMA_EMBEDDING_MODEL", "nomic-embed-text"),
        dimensions=dimensions,
    )
    async with embedding:
        kb = await make_kb("hr-ollama", HR_DOCUMENTS, embedding_model=embedding)
        hits = await kb.search(["How many vacation days do employees get?"], top_k=3)

    assert hits[0].chunk.source == "pto.md"


async def test_an_ollama_chat_model_reranks(hr_kb: KnowledgeBase, caplog: pytest.LogCaptureFixture):
    chat = OllamaChatModel(
        credential=server(),
        model=os.environ.get("RAGFLOW_TEST_OLLAMA_CHAT_MODEL", "qwen2.5:0.5b"),
    )
    middleware = RAGMiddleware(
        [hr_kb], rerank_model=chat, mode="agentic", top_k=1, rerank_candidate_k=3
    )
    async with chat:
        with caplog.at_level(logging.WARNING, logger="ragflow_config.middleware.rag"):
            hits = await middleware.retrieve(["paid time off days per year"])

    assert len(hits) == 1
    # Best effort would fall back to vector order with a warning: the model must have answered.
    assert "rerank with" not in caplog.text
