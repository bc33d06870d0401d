"""Searching several knowledge bases at once and merging their rankings.

Knowledge bases may use different embedding models and stores, whose scores
are on different scales (a cosine of one model says nothing about a dot
product of another), so raw scores are never compared across them. Each
base's own ranking is merged by reciprocal rank fusion (Cormack, Clarke and
Buettcher, 2009): a hit scores ``sum(1 / (RRF_K + rank))`` over the rankings
that contain it. With a single base the result is that base's own order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable, Sequence

from ...rag import KnowledgeBase, VectorSearchResult
from .format import Query

# The constant of the original paper; it damps the weight of the very top ranks.
RRF_K = 60


async def search_across(
    knowledge_bases: Sequence[KnowledgeBase],
    queries: Sequence[Query],
    *,
    limit: int,
    score_threshold: float | None,
) -> list[VectorSearchResult]:
    """The best ``limit`` hits of all bases for all queries, each chunk once.

    Every base is searched concurrently for ``limit`` hits (the threshold
    applies to each base's own scores). A chunk is the same chunk when it has
    the same document id and chunk index in the same collection of the same
    store object; a chunk found through several bases gains from each ranking.
    """
    if not knowledge_bases or not queries:
        return []
    rankings = await asyncio.gather(
        *(
            kb.search(list(queries), top_k=limit, score_threshold=score_threshold)
            for kb in knowledge_bases
        )
    )
    fused: dict[Hashable, float] = {}
    hits: dict[Hashable, VectorSearchResult] = {}
    for kb, ranking in zip(knowledge_bases, rankings, strict=True):
        for rank, hit in enumerate(ranking, start=1):
            key = (id(kb.vector_store), kb.collection, hit.document_id, hit.chunk.chunk_index)
            fused[key] = fused.get(key, 0.0) + 1.0 / (RRF_K + rank)
            hits.setdefault(key, hit)
    best_first = sorted(hits, key=fused.__getitem__, reverse=True)
    return [hits[key] for key in best_first[:limit]]
