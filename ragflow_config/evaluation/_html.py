"""``eval --html``: one self-contained HTML file with the results as tables and charts.

Per knowledge base: the metric table (with p-values when two runs are
compared), a bar per query of the main metric (its difference, right minus
left, sorted so the queries that got worse come first), where the relevant
sources landed in the rankings, and the worst queries' top hits with their
explain. No script, no stylesheet or font from elsewhere: the charts are
inline SVG (``_charts``), so the file opens offline, from a CI artifact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from .. import __version__
from .._extras import require
from ..message import TextBlock
from ..rag._explain import ExplainedHit
from ._charts import SERIES_COLOURS, Bar, Series, bar_chart, grouped_bar_chart
from ._metrics import GAINS, METRICS, metric_label
from ._queries import JudgedQuery
from ._results import EvaluationResult, QueryResult
from ._significance import SIGNIFICANCE_LEVEL, compare, describe_test

MAIN_METRIC = "ndcg"
"""The metric the per-query chart and the worst queries are read on."""
WORST = 10
"""Queries whose top hits the report shows, worst first."""
EXPLAINED_HITS = 5
"""Top hits shown (and kept by ``evaluate(explain=...)``) per query and run."""


@dataclass(frozen=True)
class Run:
    """One pipeline's results on a knowledge base's queries, and how the report names it."""

    label: str
    result: EvaluationResult


@dataclass(frozen=True)
class Section:
    """One knowledge base: one run, or two compared (the second minus the first)."""

    name: str
    runs: Sequence[Run]
    queries: Sequence[JudgedQuery]


def html_report(sections: Sequence[Section]) -> str:
    """The whole report as one HTML document."""
    jinja2 = require("jinja2", "report")
    markup = require("markupsafe", "report").Markup  # Jinja2's own dependency
    template = resources.files(__package__).joinpath("report.html").read_text(encoding="utf-8")
    environment = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
    labels = [run.label for run in sections[0].runs] if sections else []
    return str(
        environment.from_string(template).render(
            version=__version__,
            labels=labels,
            sections=[_section(section, markup) for section in sections],
            gains=GAINS,
        )
    )


def _section(section: Section, markup: Any) -> dict[str, Any]:
    runs = section.runs
    first = runs[0].result
    k = first.k
    main = metric_label(MAIN_METRIC, k)
    judged = {query.id: query for query in section.queries}
    if len(runs) == 2:
        left, right = runs[0].result, runs[1].result
        rows = [
            {
                "metric": metric_label(row.metric, k),
                "values": [row.left, row.right],
                "difference": round(row.difference, 4) + 0.0,  # never -0.0000
                "p_value": row.p_value,
                "significant": row.significant,
            }
            for row in compare(left, right)
        ]
        worst = _by_difference(left, right)
        test = f"p: {describe_test(first.query_count)}; significant: p < {SIGNIFICANCE_LEVEL}"
        chart_title = f"{main} per query: {runs[1].label} minus {runs[0].label}, worst first"
        bars = [_difference_bar(a, b) for a, b in worst]
        order = [a.id for a, _ in worst]
    else:
        rows = [
            {"metric": metric_label(name, k), "values": [first.metrics[name]]} for name in METRICS
        ]
        ranked = sorted(first.queries, key=lambda q: (q.metrics[MAIN_METRIC], q.id))
        test = ""
        chart_title = f"{main} per query, lowest first"
        bars = [
            Bar(
                q.id,
                q.metrics[MAIN_METRIC],
                f"{q.id}: {q.query} ({main} {q.metrics[MAIN_METRIC]:.4f})",
            )
            for q in ranked
        ]
        order = [q.id for q in ranked]
    per_query = bar_chart(
        bars, title=chart_title, axis=main, signed=len(runs) == 2, name="per-query"
    )
    landed = [_landed(run.result) for run in runs]
    positions = grouped_bar_chart(
        [str(rank) for rank in range(1, k + 1)],
        [
            Series(run.label, ranks, colour)
            for run, (ranks, _), colour in zip(runs, landed, SERIES_COLOURS, strict=False)
        ],
        title=f"Where the relevant sources landed: their ranks 1 to {k}",
        axis="relevant sources",
        name="rank-positions",
    )
    return {
        "name": section.name,
        "query_count": first.query_count,
        "k": k,
        "main": main,
        "labels": [run.label for run in runs],
        "rows": rows,
        "test": test,
        "per_query": markup(per_query),
        "chart_title": chart_title,
        "positions": markup(positions),
        "relevant": sum(row.relevant_count for row in first.queries),
        "missed": [
            {"label": run.label, "count": missed}
            for run, (_, missed) in zip(runs, landed, strict=True)
        ],
        "worst": [_worst(query_id, runs, judged.get(query_id)) for query_id in order[:WORST]],
    }


def _by_difference(
    left: EvaluationResult, right: EvaluationResult
) -> list[tuple[QueryResult, QueryResult]]:
    """Pairs of one query's rows, the largest loss on the main metric first."""
    theirs = {row.id: row for row in right.queries}
    pairs = [(row, theirs[row.id]) for row in left.queries if row.id in theirs]
    return sorted(
        pairs, key=lambda p: (p[1].metrics[MAIN_METRIC] - p[0].metrics[MAIN_METRIC], p[0].id)
    )


def _difference_bar(left: QueryResult, right: QueryResult) -> Bar:
    before, after = left.metrics[MAIN_METRIC], right.metrics[MAIN_METRIC]
    difference = round(after - before, 12)  # equal rankings differ by rounding only
    kind = "worse" if difference < 0 else "better" if difference > 0 else "same"
    title = f"{left.id}: {left.query} ({before:.4f} -> {after:.4f}, {difference:+.4f})"
    return Bar(left.id, difference, title, kind)


def _landed(result: EvaluationResult) -> tuple[list[float], int]:
    """Relevant sources at each rank 1..k over all queries, and how many are not in the top k.

    The second is drawn as a number, not a bar: with more relevant sources
    than k a query (MED has 23 on average), it would dwarf the ranks.
    """
    counts = [0.0] * result.k
    missed = 0
    for row in result.queries:
        found = 0
        for index, entry in enumerate(row.ranking[: result.k]):
            if entry.grade > 0:
                counts[index] += 1
                found += 1
        missed += max(row.relevant_count - found, 0)
    return counts, missed


def _worst(query_id: str, runs: Sequence[Run], judged: JudgedQuery | None) -> dict[str, Any]:
    rows = [next(row for row in run.result.queries if row.id == query_id) for run in runs]
    return {
        "id": query_id,
        "query": rows[0].query,
        "relevant_count": rows[0].relevant_count,
        "values": [row.metrics[MAIN_METRIC] for row in rows],
        "runs": [
            {
                "label": run.label,
                "explained": query_id in run.result.explained,
                "hits": [_hit(hit, judged) for hit in run.result.explained.get(query_id, [])][
                    :EXPLAINED_HITS
                ],
            }
            for run in runs
        ],
    }


def _hit(hit: ExplainedHit, judged: JudgedQuery | None) -> dict[str, Any]:
    content = hit.chunk.content
    text = content.text if isinstance(content, TextBlock) else f"<{content.media_type} data>"
    relevant = judged is not None and any(
        judgement.matches(hit.chunk.source, text) for judgement in judged.relevant
    )
    return {
        "source": hit.chunk.source,
        "chunk": hit.chunk.chunk_index,
        "score": hit.score,
        "relevant": relevant,
        "why": hit.explain.summary(),
        "text": " ".join(text.split())[:280],
    }
