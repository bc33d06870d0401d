"""A reranked search's explain: the reranker's name, score, and the hit's rank before and after."""

from __future__ import annotations

from ragflow_config.rag import QdrantStore
from ragflow_config.rerankers import HttpReranker

from ._server import overlap
from .conftest import QUERY, pets, text


async def test_the_explain_of_a_reranked_hit_gives_both_ranks_and_the_score(
    store: QdrantStore, tei: HttpReranker
) -> None:
    retrieved = await pets(store).search([QUERY], top_k=6)
    kb = pets(store, tei, candidates=4)
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
