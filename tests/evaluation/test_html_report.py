"""``eval --html``: one self-contained file with the metric table, the charts and explained hits.

Two real pipelines over one corpus (dense and hybrid retrieval, the hashing
model), run and compared by the CLI; the charts are read back as XML and
checked against the same run's ``--json`` figures.
"""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from _git_repository import git, repository

from ragflow_config.cli import main
from ragflow_config.evaluation import METRICS
from ragflow_config.evaluation._html import EXPLAINED_HITS

from .conftest import DOCUMENTS, write_project

MORE_DOCUMENTS = {
    **DOCUMENTS,
    "coffee.md": "Espresso forces hot water through finely ground coffee beans.",
    "bread.md": "Sourdough bread rises slowly with wild yeast and lactic bacteria.",
    "bikes.md": "A bicycle chain needs oil every few hundred kilometres of riding.",
    "rain.md": "Rain forms when water droplets in clouds grow heavy and fall.",
    "moon.md": "The moon's phases follow its orbit around the earth every month.",
}
QUERIES = """\
queries:
  - {id: q1, query: how many hours do cats sleep, relevant: [cats.md]}
  - {id: q2, query: dogs bark at strangers, relevant: [dogs.md]}
  - {id: q3, query: brewing green tea water, relevant: [tea.md, coffee.md]}
  - {id: q4, query: wild yeast bread, relevant: [bread.md]}
  - {id: q5, query: oil for a bicycle chain, relevant: [bikes.md]}
  - {id: q6, query: why does water fall from clouds, relevant: [rain.md]}
  - {id: q7, query: orbit phases, relevant: [moon.md]}
"""


def pipeline(folder: Path, name: str, mode: str) -> Path:
    return write_project(
        folder,
        name,
        f"""\
        sources: [{{path: corpus}}]
        retrieval: {{mode: {mode}}}
        evaluation: {{queries: queries.yaml, k: 3}}
        """,
        dimensions=32,
        documents=MORE_DOCUMENTS,
        queries=QUERIES,
    )


def svg(report: str, name: str) -> ET.Element:
    """The report's inline SVG chart of class ``name``, parsed."""
    match = re.search(rf'<svg [^>]*class="chart {name}".*?</svg>', report, re.DOTALL)
    assert match, name
    return ET.fromstring(match.group(0))


def bars(chart: ET.Element) -> list[ET.Element]:
    return [
        e for e in chart.iter("{http://www.w3.org/2000/svg}rect") if "bar" in e.get("class", "")
    ]


@pytest.fixture
def compared(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, dict]:
    dense, hybrid = pipeline(tmp_path, "dense", "dense"), pipeline(tmp_path, "hybrid", "hybrid")
    for path in (dense, hybrid):
        assert main(["run", str(path), "--workers", "0"]) == 0
    capsys.readouterr()
    out = tmp_path / "report.html"
    assert main(["eval", str(dense), str(hybrid), "--json", "--html", str(out)]) == 0
    return out.read_text(encoding="utf-8"), json.loads(capsys.readouterr().out)


def test_the_report_has_one_bar_per_query_sorted_worst_first(compared: tuple[str, dict]) -> None:
    report, printed = compared
    left, right = printed["results"]["notes"].values()
    before = {q["id"]: q["metrics"]["ndcg"] for q in left["queries"]}
    after = {q["id"]: q["metrics"]["ndcg"] for q in right["queries"]}
    chart = svg(report, "per-query")
    drawn = bars(chart)
    assert len(drawn) == len(before) == 7  # one bar per query
    values = [float(bar.get("data-value", "nan")) for bar in drawn]
    assert values == sorted(values)  # the worst first
    for bar in drawn:
        query = bar.get("data-label", "")
        assert float(bar.get("data-value", "nan")) == pytest.approx(after[query] - before[query])
        kind = bar.get("class", "").split()[1]
        difference = after[query] - before[query]
        assert kind == ("worse" if difference < 0 else "better" if difference > 0 else "same")
    assert any(after[q] != before[q] for q in before)  # the two runs differ somewhere


def test_one_run_has_a_bar_per_query_lowest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    dense = pipeline(tmp_path, "dense", "dense")
    assert main(["run", str(dense), "--workers", "0"]) == 0
    out = tmp_path / "one.html"
    capsys.readouterr()
    assert main(["eval", str(dense), "--json", "--html", str(out)]) == 0
    printed = capsys.readouterr()
    assert printed.err == f"wrote the HTML report to {out}\n"  # stdout: the JSON alone
    [result] = json.loads(printed.out)["results"]["notes"].values()
    report = out.read_text(encoding="utf-8")
    drawn = bars(svg(report, "per-query"))
    values = {q["id"]: q["metrics"]["ndcg"] for q in result["queries"]}
    expected = sorted(values.items(), key=lambda item: (item[1], item[0]))
    assert [b.get("data-label") for b in drawn] == [query for query, _ in expected]
    assert [float(b.get("data-value", "nan")) for b in drawn] == pytest.approx(
        [value for _, value in expected], abs=1e-6
    )
    assert {b.get("class") for b in drawn} == {"bar neutral"}
    assert "p-value" not in report  # nothing compared


def test_the_rank_chart_counts_every_relevant_source_once_per_run(
    compared: tuple[str, dict],
) -> None:
    report, printed = compared
    chart = svg(report, "rank-positions")
    for label, result in printed["results"]["notes"].items():
        drawn = [bar for bar in bars(chart) if bar.get("data-series") == label]
        assert [bar.get("data-label") for bar in drawn] == ["1", "2", "3"]
        counts = [float(bar.get("data-value", "nan")) for bar in drawn]
        missed = re.search(rf'<span class="count" data-label="{label}">(\d+)</span>', report)
        assert missed, label
        relevant = sum(q["relevant_count"] for q in result["queries"])
        assert sum(counts) + int(missed.group(1)) == relevant
        at_rank_1 = sum(
            1 for q in result["queries"] if q["ranking"] and q["ranking"][0]["grade"] > 0
        )
        assert counts[0] == at_rank_1


def test_the_metric_table_and_the_worst_queries_hits_are_explained(
    compared: tuple[str, dict],
) -> None:
    report, printed = compared
    table = re.search(r'<table class="metrics">.*?</table>', report, re.DOTALL)
    assert table
    rows = re.findall(r"<tr[^>]*><td>([a-z_@0-9]+)</td>", table.group(0))
    assert len(rows) == len(METRICS)
    p_values = printed["comparisons"]["notes"]["metrics"]
    for metric, cells in zip(
        METRICS,
        re.findall(r"<tr[^>]*><td>[^<]+</td>(.*?)</tr>", table.group(0), re.DOTALL),
        strict=True,
    ):
        assert f"<td>{p_values[metric]['p_value']:.4f}</td>" in cells
    worst = re.findall(r'<details class="worst-query".*?</details>', report, re.DOTALL)
    assert len(worst) == 7  # all of them: fewer than 10
    first = worst[0]
    whys = re.findall(r'<div class="why">(.*?)</div>', first)
    assert whys and any(w.startswith("dense #") for w in whys)
    assert any(re.search(r"; lexical (#\d|not returned).*; weighted ", w) for w in whys)  # hybrid


def test_the_report_stands_alone(compared: tuple[str, dict]) -> None:
    report, _ = compared
    assert len(report.encode()) < 2_000_000
    assert "<script" not in report and "<link" not in report and "@import" not in report
    outside = re.findall(r'(?:src|href)="([^"]+)"', report) + re.findall(r"url\(", report)
    assert outside == []  # no file, font or stylesheet from elsewhere


def test_eval_against_writes_the_report_of_the_ref_and_the_working_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    out = tmp_path / "against.html"
    file = str(repo / "pipeline.yaml")
    assert (
        main(["eval", file, "--against", "main", "--format", "markdown", "--html", str(out)]) == 0
    )
    capsys.readouterr()
    report = out.read_text(encoding="utf-8")
    assert len(bars(svg(report, "per-query"))) == 6  # the repository's six judged queries
    commit = git(repo, "rev-parse", "main")[:12]
    assert f"<b>main ({commit})</b> (left) with <b>working tree</b> (right)" in report
    explained = len(re.findall(r'<div class="why">dense #', report))
    assert explained == 6 * 2 * EXPLAINED_HITS  # every query's top hits, on both sides
