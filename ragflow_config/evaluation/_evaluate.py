"""Running a judged query set through ``KnowledgeBase.search``, as agents search."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from ..rag import KnowledgeBase, VectorSearchResult
from ..rag._explain import ExplainedHit
from ._metrics import average_precision, mean_metrics, score_ranking
from ._queries import JudgedQuery
from ._ranking import rank_sources
from ._results import EvaluationResult, QueryResult, RankedSource

DEPTH = 1000
"""Sources ranked per query for ``map_uncut``: trec_eval's default number of hits."""
# Hits asked for per wanted source; a source usually has several chunks among the hits.
_HITS_PER_SOURCE = 4
# Never ask for more hits than this for a ranking of up to 250 sources, even when a
# few sources fill the whole list.
_MAX_HITS = 1000


async def evaluate(
    knowledge_base: KnowledgeBase,
    queries: Sequence[JudgedQuery],
    k: int,
    *,
    concurrency: int = 4,
    depth: int = DEPTH,
    explain: int = 0,
) -> EvaluationResult:
    """Search with every query and score its ranking of distinct sources against its judgements.

    Metrics cut at ``k`` read the top ``k`` sources of a search for about
    ``4 * k`` hits, the search an agent makes, so a hybrid search fuses the
    candidates it would fuse for the agent. ``map_uncut`` reads the first
    ``depth`` sources of a second, deep search (when ``depth > k``).

    ``explain`` keeps the first that many hits of each query's search with
    their explain (``EvaluationResult.explained``); the search is the same.

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
    explained: dict[str, list[ExplainedHit]] = {}

    async def run(query: JudgedQuery) -> QueryResult:
        async with limit:
            ranking, hits = await _ranking(knowledge_base, query, k, explain=explain > 0)
            if explain:
                explained[query.id] = [hit for hit in hits if isinstance(hit, ExplainedHit)][
                    :explain
                ]
            whole = (await _ranking(knowledge_base, query, depth))[0] if depth > k else ranking
        judged = [judgement.grade for judgement in query.relevant]
        metrics = score_ranking([entry.grade for entry in ranking], judged, k)
        metrics["map_uncut"] = average_precision([entry.grade for entry in whole], len(judged))
        return QueryResult(
            id=query.id,
            query=query.query,
            relevant_count=len(query.relevant),
            metrics=metrics,
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
        k=k,
        queries=list(rows),
        metrics=mean_metrics([r.metrics for r in rows]),
        explained={row.id: explained[row.id] for row in rows if row.id in explained},
    )


async def _ranking(
    knowledge_base: KnowledgeBase, query: JudgedQuery, n: int, *, explain: bool = False
) -> tuple[list[RankedSource], list[VectorSearchResult]]:
    """Ask for more hits until ``n`` sources are ranked or the knowledge base runs out;
    the ranking and the hits it was read from."""
    most = max(_MAX_HITS, _HITS_PER_SOURCE * n)
    wanted = min(_HITS_PER_SOURCE * n, most)
    while True:
        hits = await knowledge_base.search([query.query], top_k=wanted, explain=explain)
        ranking = rank_sources(hits, query.relevant, n)
        if len(ranking) == n or len(hits) < wanted or wanted == most:
            return ranking, hits
        wanted = min(wanted * _HITS_PER_SOURCE, most)
