"""`ragflow-config eval` on real pipeline files: tables, thresholds, comparisons."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragflow_config.cli import main

from .conftest import DOCUMENTS, write_project

QUERIES = """\
queries:
  - {id: q1, query: how many hours do cats sleep, relevant: [cats.md]}
  - {id: q2, query: dogs bark at strangers, relevant: [dogs.md]}
  - {id: q3, query: brewing green tea water, relevant: [{source: tea.md, grade: 2}]}
"""


def project(
    tmp_path: Path,
    name: str,
    chunk_size: int,
    recall: float,
    *,
    documents: dict[str, str] = DOCUMENTS,
    queries: str = QUERIES,
    exclude: tuple[str, ...] = (),
) -> Path:
    return write_project(
        tmp_path,
        name,
        f"""\
        sources: [{{path: corpus, exclude: {list(exclude)}}}]
        chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 0}}}}
        evaluation:
          queries: queries.yaml
          k: 2
          thresholds: {{recall: {recall}}}
        """,
        dimensions=256,
        documents=documents,
        queries=queries,
    )


def test_eval_prints_a_table_and_passes_its_thresholds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project(tmp_path, "a", 64, recall=0.9)
    assert main(["run", str(path), "--workers", "0"]) == 0
    capsys.readouterr()
    assert main(["eval", str(path)]) == 0
    out = capsys.readouterr().out
    assert "3 queries, k = 2" in out
    assert "recall@2" in out and "1.0000" in out


def test_a_missed_threshold_fails_naming_metric_value_and_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project(tmp_path, "a", 64, recall=0.9)
    main(["run", str(path), "--workers", "0"])
    (tmp_path / "queries.yaml").write_text(
        QUERIES + "  - {id: q4, query: zebra stripes savanna, relevant: [nowhere.md]}\n"
    )
    capsys.readouterr()
    assert main(["eval", str(path), "--json"]) == 1
    captured = capsys.readouterr()
    failures = json.loads(captured.out)["failures"]
    assert failures == [f"{path}: notes: recall@2 = 0.75 < 0.90"]
    assert "FAILED" in captured.err


def test_an_unindexed_knowledge_base_is_an_error_not_zero_scores(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project(tmp_path, "a", 64, recall=0.5)
    assert main(["eval", str(path)]) == 1
    assert "holds no documents; index it first" in capsys.readouterr().err


def test_two_pipelines_are_compared_side_by_side(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    left = project(tmp_path, "a", 64, recall=0.5)
    right = project(tmp_path, "b", 8, recall=0.5)
    for path in (left, right):
        main(["run", str(path), "--workers", "0"])
    capsys.readouterr()
    assert main(["eval", str(left), str(right)]) == 0
    out = capsys.readouterr().out
    header = out.splitlines()[1].split()
    assert header == ["metric", str(left), str(right), "difference", "p"]


# Hashing embeddings are lexical: a query ranks first the file holding all its
# words, then a file sharing some of them, so the rankings below are known.
SHARED_WORDS = {
    "cats.md": "cats sleep all day",
    "dogs.md": "dogs bark at night",
    "tea.md": "green tea at night",
}
TWO_RELEVANT = """\
queries:
  - {id: q1, query: cats sleep, relevant: [cats.md]}
  - {id: q2, query: dogs bark at night, relevant: [dogs.md, tea.md]}
  - {id: q3, query: green tea, relevant: [{source: tea.md, grade: 2}]}
"""


def test_a_comparison_reports_each_metric_of_both_pipelines_and_their_difference(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = {"documents": SHARED_WORDS, "queries": TWO_RELEVANT}
    whole = project(tmp_path, "whole", 64, recall=0.5, **corpus)
    no_tea = project(tmp_path, "no-tea", 64, recall=0.5, exclude=("tea.md",), **corpus)
    for path in (whole, no_tea):
        assert main(["run", str(path), "--workers", "0"]) == 0
    capsys.readouterr()

    assert main(["eval", str(whole), str(no_tea)]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == "3 queries, k = 2"
    assert lines[1].split() == ["metric", str(whole), str(no_tea), "difference", "p"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[2:10]}
    # whole, k = 2: q1 [cats, -], q2 [dogs, tea], q3 [tea, -]: all found at rank 1.
    # no-tea: q1 [cats, -]; q2 [dogs, cats]: half its relevant files; q3 nothing relevant.
    # ndcg of q2 without tea: (1/log2 2) / (1/log2 2 + 1/log2 3) = 0.6131 (grade 1: both gains).
    # AP of q2 without tea: (1/1) / 2 = 0.5.
    # p, exact over 2^3 patterns; q1 never differs, so only the signs of q2 and q3 matter:
    # one non-zero difference -> p = 1; two of one sign -> |sum| is reached by 2 of 4 -> 0.5.
    assert rows == {
        "recall@2": ["1.0000", "0.5000", "-0.5000", "0.5000"],  # (1 + 1/2 + 0) / 3
        # (1/2 + 2/2 + 1/2) / 3, (1/2 + 1/2) / 3
        "precision@2": ["0.6667", "0.3333", "-0.3333", "0.5000"],
        "mrr@2": ["1.0000", "0.6667", "-0.3333", "1.0000"],  # only q3 differs
        "map@2": ["1.0000", "0.5000", "-0.5000", "0.5000"],  # (1 + 0.5 + 0) / 3
        # The whole ranking adds nothing: without tea.md, q2's other relevant file is never found.
        "map_uncut": ["1.0000", "0.5000", "-0.5000", "0.5000"],
        "ndcg@2": ["1.0000", "0.5377", "-0.4623", "0.5000"],  # (1 + 0.6131 + 0) / 3
        "ndcg_exp@2": ["1.0000", "0.5377", "-0.4623", "0.5000"],
        "hit_rate@2": ["1.0000", "0.6667", "-0.3333", "1.0000"],
    }
    assert lines[10] == (
        "p: paired randomisation test, two-sided, exact over all 8 sign patterns; * p < 0.05"
    )

    assert main(["eval", str(whole), str(no_tea), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    comparison = document["comparisons"]["notes"]
    assert comparison["test"].startswith("paired randomisation test, two-sided, exact")
    assert comparison["metrics"]["map"] == {
        "difference": pytest.approx(-0.5),
        "p_value": 0.5,
        "significant": False,
    }
    assert set(comparison["metrics"]) == {
        "recall",
        "precision",
        "mrr",
        "map",
        "map_uncut",
        "ndcg",
        "ndcg_exp",
        "hit_rate",
    }
    assert document["results"]["notes"][str(no_tea)]["metrics"]["map"] == pytest.approx(0.5)


def test_one_file_has_no_comparison_in_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project(tmp_path, "a", 64, recall=0.5)
    assert main(["run", str(path), "--workers", "0"]) == 0
    capsys.readouterr()
    assert main(["eval", str(path), "--json"]) == 0
    assert "comparisons" not in json.loads(capsys.readouterr().out)


def test_eval_takes_one_or_two_files_and_needs_an_evaluation_block(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project(tmp_path, "a", 64, recall=0.5)
    assert main(["eval", str(path), str(path), str(path), "--json"]) == 2
    assert json.loads(capsys.readouterr().out) == {
        "error": {"message": "eval takes one pipeline file, or two to compare"}
    }
    assert main(["eval", str(path), "--kb", "other", "--json"]) == 2
    assert json.loads(capsys.readouterr().out) == {
        "error": {"message": f"{path}: no knowledge base with an `evaluation` block"}
    }


def test_trec_qrels_and_topics_are_found_beside_the_pipeline_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = project(tmp_path, "a", 64, recall=0.9)
    (tmp_path / "topics.tsv").write_text("1\thow many hours do cats sleep\n", encoding="utf-8")
    (tmp_path / "judged.qrels").write_text("1 0 cats.md 1\n", encoding="utf-8")
    text = path.read_text().replace("queries: queries.yaml", "queries: judged.qrels")
    path.write_text(text.replace("k: 2", "k: 2\n      topics: topics.tsv"))
    assert main(["run", str(path), "--workers", "0"]) == 0
    monkeypatch.chdir(tmp_path / "corpus")  # not where the files are
    capsys.readouterr()
    assert main(["eval", str(path), "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)["results"]["notes"].values()
    assert result["query_count"] == 1


def test_each_file_is_held_to_its_own_thresholds_and_every_miss_is_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missed = QUERIES + "  - {id: q4, query: zebra stripes savanna, relevant: [nowhere.md]}\n"
    a = project(tmp_path, "a", 64, recall=0.9, queries=missed)
    b = project(tmp_path, "b", 64, recall=0.8, queries=missed)
    for path in (a, b):
        assert main(["run", str(path), "--workers", "0"]) == 0
    capsys.readouterr()
    assert main(["eval", str(a), str(b), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["failures"] == [
        f"{a}: notes: recall@2 = 0.75 < 0.90",
        f"{b}: notes: recall@2 = 0.75 < 0.80",
    ]


def test_the_table_is_titled_with_the_knowledge_base_and_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project(tmp_path, "a", 64, recall=0.5)
    assert main(["run", str(path), "--workers", "0"]) == 0
    capsys.readouterr()
    assert main(["eval", str(path)]) == 0
    assert f"notes ({path})" in capsys.readouterr().out
