"""The metrics of one ranking, and their macro average over queries."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

METRICS = ("recall", "precision", "mrr", "ndcg", "hit_rate")
"""Metric names, in display order; also the keys of ``EvaluationThresholds``."""


def metric_label(name: str, k: int) -> str:
    """``recall`` at k=5 -> ``recall@5``: every metric is cut at k."""
    return f"{name}@{k}"


def score_ranking(grades: Sequence[int], judged: Sequence[int], k: int) -> dict[str, float]:
    """Metrics of one query.

    ``grades`` holds the grade of each ranked entry, best first (0 = not
    relevant); only the first ``k`` count. ``judged`` holds the grade of every
    relevant source of the query. A query with no relevant source scores 0 on
    every metric, as in trec_eval.
    """
    top = list(grades[:k])
    found = sum(1 for grade in top if grade > 0)
    first = next((rank for rank, grade in enumerate(top, start=1) if grade > 0), None)
    ideal = _dcg(sorted(judged, reverse=True)[:k])
    return {
        "recall": found / len(judged) if judged else 0.0,
        "precision": found / k,
        "mrr": 1 / first if first else 0.0,
        "ndcg": _dcg(top) / ideal if ideal else 0.0,
        "hit_rate": 1.0 if found else 0.0,
    }


def _dcg(grades: Sequence[int]) -> float:
    return sum((2**grade - 1) / math.log2(rank + 1) for rank, grade in enumerate(grades, start=1))


def mean_metrics(per_query: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The macro average: every query weighs the same."""
    if not per_query:
        raise ValueError("no queries to average")
    return {name: math.fsum(row[name] for row in per_query) / len(per_query) for name in METRICS}
