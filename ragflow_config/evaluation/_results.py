"""What an evaluation produces: one row per query, and the averages."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..rag._explain import ExplainedHit


@dataclass(frozen=True)
class RankedSource:
    """One entry of a query's ranking: a source, its grade (0 = not relevant) and best score."""

    source: str
    grade: int
    score: float


@dataclass(frozen=True)
class QueryResult:
    """One query: its metrics and the top-k sources it retrieved."""

    id: str
    query: str
    relevant_count: int
    metrics: dict[str, float]
    ranking: list[RankedSource]


@dataclass(frozen=True)
class EvaluationResult:
    """Per-query rows and their macro-averaged ``metrics`` (keys: ``METRICS``).

    ``explained`` holds, by query id, the first hits of each query's search
    with their explain, when the evaluation was asked to keep them (an HTML
    report shows them); it is no part of ``as_dict``.
    """

    k: int
    queries: list[QueryResult]
    metrics: dict[str, float]
    explained: dict[str, list[ExplainedHit]] = field(default_factory=dict)

    @property
    def query_count(self) -> int:
        return len(self.queries)

    @property
    def no_relevant_count(self) -> int:
        """Queries judged to have no relevant source: they score 0 and count in the averages."""
        return sum(1 for row in self.queries if row.relevant_count == 0)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON output."""
        return {
            "k": self.k,
            "query_count": self.query_count,
            "no_relevant_count": self.no_relevant_count,
            "metrics": dict(self.metrics),
            "queries": [asdict(row) for row in self.queries],
        }
