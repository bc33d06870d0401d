"""Running a judged query set through ``KnowledgeBase.search``, as agents search."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..rag import KnowledgeBase
from ._metrics import mean_metrics, score_ranking
from ._queries import JudgedQuery
from ._ranking import rank_sources
from ._results import EvaluationResult, QueryResult, RankedSource

# Hits asked for per wanted source; a source usually has several chunks among the hits.
_HITS_PER_SOURCE = 4
# Never ask for more hits than this, even when a few sources fill the whole list.
_MAX_HITS = 1000


async def evaluate(
    knowledge_base: KnowledgeBase,
    queries: Sequence[JudgedQuery],
    k: int,
    *,
    concurrency: int = 4,
) -> EvaluationResult:
    """Search with every query and score the top ``k`` distinct sources against its judgements.

    Queries run ``concurrency`` at a time; the first failure (an unreachable
    store, a failing embedding model) cancels the others and propagates.
    """
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    if not queries:
        raise ValueError("no queries to evaluate")
    limit = asyncio.Semaphore(concurrency)

    async def run(query: JudgedQuery) -> QueryResult:
        async with limit:
            ranking = await _ranking(knowledge_base, query, k)
        grades = [entry.grade for entry in ranking]
        judged = [judgement.grade for judgement in query.relevant]
        return QueryResult(
            id=query.id,
            query=query.query,
            relevant_count=len(query.relevant),
            metrics=score_ranking(grades, judged, k),
            ranking=ranking,
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


async def _ranking(knowledge_base: KnowledgeBase, query: JudgedQuery, k: int) -> list[RankedSource]:
    """Ask for more hits until ``k`` sources are ranked or the knowledge base runs out."""
    wanted = min(_HITS_PER_SOURCE * k, _MAX_HITS)
    while True:
        hits = await knowledge_base.search([query.query], top_k=wanted)
        ranking = rank_sources(hits, query.relevant, k)
        if len(ranking) == k or len(hits) < wanted or wanted == _MAX_HITS:
            return ranking
        wanted = min(wanted * _HITS_PER_SOURCE, _MAX_HITS)
