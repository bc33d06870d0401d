"""The metrics of one ranking, and their macro average over queries."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

METRICS = ("recall", "precision", "mrr", "map", "map_uncut", "ndcg", "ndcg_exp", "hit_rate")
"""Metric names, in display order; also the keys of ``EvaluationThresholds``.

``ndcg`` has linear gain (the grade), as trec_eval's ``ndcg_cut``;
``ndcg_exp`` has exponential gain (2^grade - 1). ``map`` is trec_eval's
``map_cut``: average precision over the top k. ``map_uncut`` is trec_eval's
``map``: average precision over the whole ranking (its first ``DEPTH`` sources).
"""

UNCUT = frozenset({"map_uncut"})
"""Metrics over the whole ranking rather than its top k."""

GAINS = (
    "ndcg: linear gain (trec_eval's ndcg_cut); ndcg_exp: gain 2^grade - 1; "
    "map: trec_eval's map_cut; map_uncut: trec_eval's map (whole ranking)"
)
"""One line stating how the metrics whose names could mislead are computed."""


def metric_label(name: str, k: int) -> str:
    """``recall`` at k=5 -> ``recall@5``; an uncut metric keeps its bare name."""
    return name if name in UNCUT else f"{name}@{k}"


def score_ranking(grades: Sequence[int], judged: Sequence[int], k: int) -> dict[str, float]:
    """Metrics of one query.

    ``grades`` holds the grade of each ranked entry, best first (0 = not
    relevant); only the first ``k`` count, except for ``map_uncut``, which
    reads them all. ``judged`` holds the grade of every
    relevant source of the query. A query with no relevant source scores 0 on
    every metric, as in trec_eval.
    """
    top = list(grades[:k])
    found = sum(1 for grade in top if grade > 0)
    first = next((rank for rank, grade in enumerate(top, start=1) if grade > 0), None)
    ideal = sorted(judged, reverse=True)[:k]
    ideal_linear, ideal_exp = _dcg(ideal, _linear), _dcg(ideal, _exponential)
    return {
        "recall": found / len(judged) if judged else 0.0,
        "precision": found / k,
        "mrr": 1 / first if first else 0.0,
        "map": average_precision(top, len(judged)),
        "map_uncut": average_precision(grades, len(judged)),
        "ndcg": _dcg(top, _linear) / ideal_linear if ideal_linear else 0.0,
        "ndcg_exp": _dcg(top, _exponential) / ideal_exp if ideal_exp else 0.0,
        "hit_rate": 1.0 if found else 0.0,
    }


def average_precision(top: Sequence[int], relevant: int) -> float:
    """Precision at the rank of each relevant entry, summed, over all ``relevant`` sources.

    Relevant sources missing from ``top`` add 0, as in trec_eval, so the value
    over the first k entries is at most min(k, R) / R.
    """
    if not relevant:
        return 0.0
    found = 0
    total = 0.0
    for rank, grade in enumerate(top, start=1):
        if grade > 0:
            found += 1
            total += found / rank
    return total / relevant


def _linear(grade: int) -> float:
    return float(grade)


def _exponential(grade: int) -> float:
    return float(2**grade - 1)


def _dcg(grades: Sequence[int], gain: Callable[[int], float]) -> float:
    return sum(gain(grade) / math.log2(rank + 1) for rank, grade in enumerate(grades, start=1))


def mean_metrics(per_query: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The macro average: every query weighs the same."""
    if not per_query:
        raise ValueError("no queries to average")
    return {name: math.fsum(row[name] for row in per_query) / len(per_query) for name in METRICS}
