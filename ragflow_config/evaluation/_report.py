"""Reading results: threshold checks, a table per knowledge base, and a side-by-side comparison."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._metrics import GAINS, METRICS, metric_label
from ._results import EvaluationResult
from ._significance import (
    PERMUTATIONS,
    SEED,
    SIGNIFICANCE_LEVEL,
    MetricComparison,
    compare,
    describe_test,
)

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


def format_comparison_markdown(
    left: EvaluationResult,
    right: EvaluationResult,
    left_label: str = "base",
    right_label: str = "this branch",
    *,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
) -> str:
    """:func:`format_comparison` as a Markdown table, for a pull-request comment, and a verdict.

    Columns: metric, both runs, the change (right minus left), the p-value and
    whether it is significant; then how p is computed, and one line saying
    which metrics changed significantly, or that none did. The same inputs
    always give the same text.
    """
    rows = compare(left, right, permutations=permutations, seed=seed)
    lines = [
        f"{_count(left.query_count)}, k = {left.k}",
        "",
        f"| metric | {_cell(left_label)} | {_cell(right_label)} | change | p-value | significant? |",
        "|:---|---:|---:|---:|---:|:---:|",
    ]
    for row in rows:
        lines.append(
            f"| {metric_label(row.metric, left.k)} | {row.left:.4f} | {row.right:.4f} "
            f"| {_change(row.difference)} | {row.p_value:.4f} | {'yes' if row.significant else 'no'} |"
        )
    test = describe_test(left.query_count, permutations, seed)
    lines += ["", f"p-value: {test}; significant: p < {SIGNIFICANCE_LEVEL}. {GAINS}."]
    lines += ["", comparison_verdict(rows, left.k, left.query_count)]
    return "\n".join(lines)


def comparison_verdict(rows: list[MetricComparison], k: int, query_count: int) -> str:
    """One line: the metrics that changed significantly, better and worse, or that none did.

    With 5 queries or fewer no change can be significant (the exact test's
    smallest p is 2 / 2^n), and the line says so.
    """

    def listed(chosen: list[MetricComparison]) -> str:
        return ", ".join(
            f"{metric_label(row.metric, k)} {_change(row.difference)} (p = {row.p_value:.4f})"
            for row in chosen
        )

    better = [row for row in rows if row.significant and row.difference > 0]
    worse = [row for row in rows if row.significant and row.difference < 0]
    if better and worse:
        return f"**Verdict: mixed.** Better: {listed(better)}. Worse: {listed(worse)}."
    if worse:
        return f"**Verdict: worse.** {listed(worse)}."
    if better:
        return f"**Verdict: better.** {listed(better)}."
    verdict = f"**Verdict: no significant change** (p ≥ {SIGNIFICANCE_LEVEL} for every metric)"
    if 2 / 2**query_count >= SIGNIFICANCE_LEVEL:
        verdict += f"; with {_count(query_count)} no change can be significant: judge more"
    return verdict + "."


def _change(difference: float) -> str:
    # round() first so that a zero difference shows as +0.0000, never -0.0000.
    return f"{round(difference, 4) + 0.0:+.4f}"


def _cell(text: str) -> str:
    """Text that keeps a Markdown table cell whole: no `|`, no line break."""
    return " ".join(text.split()).replace("|", "\\|")


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
