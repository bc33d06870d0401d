"""From search hits (chunks) to a ranking of sources, judged against a query's judgements."""

from __future__ import annotations

from collections.abc import Sequence

from ..message import TextBlock
from ..rag import VectorSearchResult
from ._queries import Judgement
from ._results import RankedSource


def rank_sources(
    hits: Sequence[VectorSearchResult], judgements: Sequence[Judgement], k: int
) -> list[RankedSource]:
    """The first ``k`` entries of the source ranking, in the order of ``hits``.

    A hit is relevant when it satisfies the judgement of its source (same
    source and, when the judgement names passages, a chunk containing one).
    Each source is listed once, at its first hit; the exception is a source
    whose first hit is not relevant but a later one is: the relevant hit is
    listed too, at its own rank, so finding the answer late counts as late.
    """
    by_source = {judgement.source: judgement for judgement in judgements}
    listed: dict[str, bool] = {}  # source -> listed as relevant
    ranking: list[RankedSource] = []
    for hit in hits:
        if len(ranking) == k:
            break
        source = hit.chunk.source
        judgement = by_source.get(source)
        text = hit.chunk.content.text if isinstance(hit.chunk.content, TextBlock) else ""
        relevant = judgement is not None and judgement.matches(source, text)
        if source in listed and (listed[source] or not relevant):
            continue
        listed[source] = relevant
        grade = judgement.grade if judgement is not None and relevant else 0
        ranking.append(RankedSource(source=source, grade=grade, score=hit.score))
    return ranking
