"""Running a judged query set through ``KnowledgeBase.search``, as agents search."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..rag import KnowledgeBase
from ._metrics import mean_metrics, score_ranking
from ._queries import JudgedQuery
from ._ranking import rank_sources
from ._results import EvaluationResult, QueryResult, RankedSource

DEPTH = 1000
"""Sources ranked per query for the uncut metrics: trec_eval's default number of hits."""
# Hits asked for per wanted source; a source usually has several chunks among the hits.
_HITS_PER_SOURCE = 4


async def evaluate(
    knowledge_base: KnowledgeBase,
    queries: Sequence[JudgedQuery],
    k: int,
    *,
    concurrency: int = 4,
    depth: int = DEPTH,
) -> EvaluationResult:
    """Search with every query and score its ranking of distinct sources against its judgements.

    The ranking holds up to ``depth`` sources: metrics cut at ``k`` read its
    top ``k``, ``map_uncut`` reads it all; results keep the top ``k``.

    Queries run ``concurrency`` at a time; the first failure (an unreachable
    store, a failing embedding model) cancels the others and propagates.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if depth < k:
        raise ValueError(f"depth must be at least k = {k}, got {depth}")
    if not queries:
        raise ValueError("no queries to evaluate")
    limit = asyncio.Semaphore(concurrency)

    async def run(query: JudgedQuery) -> QueryResult:
        async with limit:
            ranking = await _ranking(knowledge_base, query, depth)
        grades = [entry.grade for entry in ranking]
        judged = [judgement.grade for judgement in query.relevant]
        return QueryResult(
            id=query.id,
            query=query.query,
            relevant_count=len(query.relevant),
            metrics=score_ranking(grades, judged, k),
            ranking=ranking[:k],
        )

    tasks = [asyncio.ensure_future(run(query)) for query in queries]
    try:
        rows = await asyncio.gather(*tasks)
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return EvaluationResult(
        k=k, queries=list(rows), metrics=mean_metrics([r.metrics for r in rows])
    )


async def _ranking(
    knowledge_base: KnowledgeBase, query: JudgedQuery, depth: int
) -> list[RankedSource]:
    """The first ``depth`` sources of one search, or fewer when its hits hold fewer."""
    hits = await knowledge_base.search([query.query], top_k=_HITS_PER_SOURCE * depth)
    return rank_sources(hits, query.relevant, depth)
