"""The LLM reranker is a reranker like the others: a knowledge base names it, and
``RAGMiddleware`` takes any reranker, the chat model it is given becoming one."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import TextBlock
from ragflow_config.middleware import RAGMiddleware
from ragflow_config.model import ScriptedChatModel
from ragflow_config.pipeline._validate import check_file, display_path
from ragflow_config.rag import (
    Chunk,
    KnowledgeBase,
    QdrantStore,
    RerankSettings,
    RetrievalSettings,
    VectorSearchResult,
)
from ragflow_config.rerankers import HttpReranker, LLMReranker

from ._server import RerankServer, overlap

TEXTS = ["cats sleep all day", "cats sleep in the sun", "dogs bark", "cats purr"]
QUERY = "cats sleep"


def texts(hits: list[VectorSearchResult]) -> list[str]:
    return [hit.chunk.content.text for hit in hits if isinstance(hit.chunk.content, TextBlock)]


@pytest.fixture
async def store() -> AsyncIterator[QdrantStore]:
    async with QdrantStore(location=":memory:") as opened:
        yield opened


async def knowledge_base(store: QdrantStore) -> KnowledgeBase:
    kb = KnowledgeBase("pets", "pets", HashingEmbeddingModel(dimensions=64), store, "pets")
    await kb.insert_document(
        [
            Chunk(content=TextBlock(text=t), source=f"{i}.txt", chunk_index=0, total_chunks=1)
            for i, t in enumerate(TEXTS)
        ],
        document_id="all",
    )
    return kb


async def test_a_knowledge_base_reranks_with_a_chat_model(store: QdrantStore) -> None:
    plain = await knowledge_base(store)
    retrieved = texts(await plain.search([QUERY], top_k=4))
    model = ScriptedChatModel(['{"ids": ["c3", "c2"]}'])
    kb = KnowledgeBase(
        "pets",
        "pets",
        HashingEmbeddingModel(dimensions=64),
        store,
        "pets",
        retrieval=RetrievalSettings(rerank=RerankSettings(reranker="llm", candidates=3)),
        reranker=LLMReranker(model=model),
    )
    hits = await kb.search([QUERY], top_k=4)
    # The model's choice (c3, c2), the third candidate it left out, then the fourth hit,
    # which was never a candidate.
    first3 = retrieved[:3]
    assert texts(hits) == [first3[2], first3[1], first3[0], retrieved[3]]


async def test_the_middleware_uses_any_reranker(store: QdrantStore, server: RerankServer) -> None:
    kb = await knowledge_base(store)
    async with HttpReranker(base_url=server.root) as reranker:
        middleware = RAGMiddleware(
            [kb], RAGMiddleware.Parameters(top_k=2, rerank_candidate_k=4), reranker=reranker
        )
        hits = await middleware.retrieve([QUERY])
    best = sorted(TEXTS, key=lambda t: -overlap(QUERY, t))[:2]
    assert sorted(texts(hits)) == sorted(best)
    assert [hit.score for hit in hits] == [2.0, 2.0]  # the reranker's scores
    [request] = server.requests
    assert sorted(request.body["texts"]) == sorted(TEXTS)  # rerank_candidate_k = 4 candidates


async def test_a_rerank_model_becomes_an_llm_reranker_with_the_middlewares_prompt(
    store: QdrantStore,
) -> None:
    kb = await knowledge_base(store)
    model = ScriptedChatModel(['{"ids": ["c2"]}'])
    prompt = "Pick the {top_k} best for: {query}"
    middleware = RAGMiddleware(
        [kb], RAGMiddleware.Parameters(top_k=1, rerank_prompt=prompt), rerank_model=model
    )
    assert isinstance(middleware.reranker, LLMReranker)
    assert middleware.reranker.parameters.rerank_prompt == prompt
    candidates = await RAGMiddleware([kb], top_k=2).retrieve([QUERY])
    assert texts(await middleware.retrieve([QUERY])) == texts(candidates)[1:2]
    with pytest.raises(ValueError, match="a reranker or a rerank_model, not both"):
        RAGMiddleware([kb], rerank_model=model, reranker=HttpReranker(base_url="http://x"))


def test_an_llm_rerankers_chat_model_must_be_defined(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("cats\n", encoding="utf-8")
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        """\
version: 1
embeddings:
  hashing: {type: hashing, parameters: {dimensions: 64}}
rerankers:
  judge:
    type: llm
    parameters: {chat_model: gtp}
chat_models:
  gpt: {type: openai_compatible, parameters: {model: gpt-4o-mini}}
knowledge_bases:
  - name: pets
    sources: [{path: docs}]
    parsers: [{type: text}]
    chunker: {type: approx_token}
    embedding: hashing
    vector_store: {type: qdrant, parameters: {location: ":memory:"}}
    collection: pets
    retrieval: {rerank: {reranker: judge}}
""",
        encoding="utf-8",
    )
    _, issues = check_file(path)
    assert [str(issue) for issue in issues] == [
        f"{display_path(path)}:7:30: rerankers.judge.parameters.chat_model: 'gtp' is not "
        "defined in `chat_models` (defined: gpt); did you mean 'gpt'?"
    ]


def test_a_bad_prompt_is_refused_as_the_middleware_refuses_it() -> None:
    with pytest.raises(ValueError, match=r"rerank_prompt must contain \{query\}"):
        LLMReranker(rerank_prompt="no query here")
