"""Reading results: threshold checks, a table per knowledge base, and a side-by-side comparison."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._metrics import GAINS, METRICS, metric_label
from ._results import EvaluationResult
from ._significance import PERMUTATIONS, SEED, SIGNIFICANCE_LEVEL, compare, describe_test

if TYPE_CHECKING:
    from ..pipeline._spec import EvaluationThresholds

# Averages are sums of fractions; a value this close to its threshold meets it.
_TOLERANCE = 1e-9


def check_thresholds(
    result: EvaluationResult, thresholds: EvaluationThresholds | Mapping[str, float | None]
) -> list[str]:
    """One message per missed threshold, e.g. ``recall@5 = 0.62 < 0.70``; empty when all are met."""
    minimums = thresholds if isinstance(thresholds, Mapping) else thresholds.model_dump()
    unknown = sorted(set(minimums) - set(METRICS))
    if unknown:
        raise ValueError(f"unknown metric(s) {', '.join(unknown)}; expected {', '.join(METRICS)}")
    messages = []
    for name in METRICS:
        minimum = minimums.get(name)
        value = result.metrics[name]
        if minimum is not None and value < minimum - _TOLERANCE:
            shown, wanted = _distinct(value, minimum)
            messages.append(f"{metric_label(name, result.k)} = {shown} < {wanted}")
    return messages


def _distinct(value: float, minimum: float) -> tuple[str, str]:
    """Both numbers with two decimals, or as many more as it takes to tell them apart."""
    for decimals in range(2, 10):
        shown, wanted = f"{value:.{decimals}f}", f"{minimum:.{decimals}f}"
        if shown != wanted:
            return shown, wanted
    return repr(value), repr(minimum)


def format_table(result: EvaluationResult, title: str) -> str:
    """The averaged metrics of one knowledge base, and which queries found nothing relevant."""
    rows = [["metric", "value"]]
    rows += [[metric_label(name, result.k), f"{result.metrics[name]:.4f}"] for name in METRICS]
    lines = [f"{title}: {_count(result.query_count)}, k = {result.k}", *_render(rows)]
    unanswerable = [row.id for row in result.queries if row.relevant_count == 0]
    missed = [
        row.id for row in result.queries if row.relevant_count and not row.metrics["hit_rate"]
    ]
    if missed:
        lines.append(f"no relevant source in the top {result.k}: {', '.join(missed)}")
    if unanswerable:
        lines.append(f"judged with no relevant source (scored 0): {', '.join(unanswerable)}")
    lines.append(GAINS)
    return "\n".join(lines)


def format_comparison(
    left: EvaluationResult,
    right: EvaluationResult,
    left_label: str,
    right_label: str,
    *,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
) -> str:
    """Two runs of the same query set side by side.

    ``difference`` is right minus left; ``p`` is the two-sided p-value of a
    paired randomisation test over the per-query values, and ``*`` marks
    p < 0.05.
    """
    rows = [["metric", left_label, right_label, "difference", "p", ""]]
    for row in compare(left, right, permutations=permutations, seed=seed):
        # round() first so that a zero difference shows as +0.0000, never -0.0000.
        change = round(row.difference, 4) + 0.0
        rows.append(
            [
                metric_label(row.metric, left.k),
                f"{row.left:.4f}",
                f"{row.right:.4f}",
                f"{change:+.4f}",
                f"{row.p_value:.4f}",
                "*" if row.significant else "",
            ]
        )
    n = left.query_count
    legend = f"p: {describe_test(n, permutations, seed)}; * p < {SIGNIFICANCE_LEVEL}"
    return "\n".join([f"{_count(n)}, k = {left.k}", *_render(rows), legend, GAINS])


def _count(queries: int) -> str:
    return f"{queries} query" if queries == 1 else f"{queries} queries"


def _render(rows: list[list[str]]) -> list[str]:
    """Columns two spaces apart: the first aligned left, the numbers right."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  ".join(
            cell.ljust(width) if column == 0 else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]
