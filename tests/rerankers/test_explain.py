"""A reranked search's explain: the reranker's name, score, and the hit's rank before and after."""

from __future__ import annotations

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.rag import KnowledgeBase, QdrantStore, RerankSettings, RetrievalSettings
from ragflow_config.rerankers import HttpReranker

from ._server import RerankServer, overlap
from .test_search import QUERY, store, text

__all__ = ["store"]  # the fixture, shared with test_search


async def test_the_explain_of_a_reranked_hit_gives_both_ranks_and_the_score(
    store: QdrantStore, server: RerankServer
) -> None:
    embedding = HashingEmbeddingModel(dimensions=64)
    retrieved = await KnowledgeBase("pets", "", embedding, store, "pets").search([QUERY], top_k=6)
    async with HttpReranker(base_url=server.root) as reranker:
        kb = KnowledgeBase(
            "pets",
            "",
            embedding,
            store,
            "pets",
            retrieval=RetrievalSettings(rerank=RerankSettings(reranker="tei", candidates=4)),
            reranker=reranker,
        )
        plain = await kb.search([QUERY], top_k=5)
        hits = await kb.search([QUERY], top_k=5, explain=True)
    assert [(text(h), h.score) for h in hits] == [(text(h), h.score) for h in plain]
    before = [text(hit) for hit in retrieved]
    for rank_after, hit in enumerate(hits[:4], 1):
        rerank = hit.explain.rerank
        assert rerank is not None and rerank.reranker == "tei"
        assert rerank.score == hit.score == overlap(QUERY, text(hit))
        assert (rerank.rank_before, rerank.rank_after) == (before.index(text(hit)) + 1, rank_after)
        assert hit.explain.retrieval_score == retrieved[rerank.rank_before - 1].score
    assert any(
        h.explain.rerank and h.explain.rerank.rank_before != h.explain.rerank.rank_after
        for h in hits
    )
    last = hits[4].explain  # past the candidates: retrieval order, no reranker's word
    assert last.rerank is None and last.retrieval_score == hits[4].score == retrieved[4].score
