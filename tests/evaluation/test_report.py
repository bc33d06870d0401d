"""Threshold messages, the per-knowledge-base table and the side-by-side comparison, pinned."""

from __future__ import annotations

import json

import pytest

from ragflow_config.evaluation import (
    EvaluationResult,
    QueryResult,
    RankedSource,
    check_thresholds,
    compare,
    format_comparison,
    format_table,
)
from ragflow_config.evaluation._metrics import mean_metrics, score_ranking
from ragflow_config.pipeline._spec import EvaluationThresholds


def row(query_id: str, grades: list[int], judged: list[int], k: int) -> QueryResult:
    ranking = [
        RankedSource(source=f"{query_id}-{i}.md", grade=g, score=1 - i / 10)
        for i, g in enumerate(grades)
    ]
    metrics = score_ranking(grades, judged, k)
    return QueryResult(
        id=query_id,
        query=f"query {query_id}",
        relevant_count=len(judged),
        metrics=metrics,
        ranking=ranking,
    )


def result(*rows: QueryResult, k: int = 3) -> EvaluationResult:
    return EvaluationResult(
        k=k, queries=list(rows), metrics=mean_metrics([r.metrics for r in rows])
    )


# q1: relevant at rank 1 of 3 -> recall 1, precision 1/3, mrr 1, ndcg 1, hit 1
# q2: the one relevant source (of 2) at rank 2 -> recall 1/2, precision 1/3, mrr 1/2,
#     ndcg = (1/log2 3) / (1 + 1/log2 3) = 0.63093 / 1.63093 = 0.38685, hit 1
# q3: nothing relevant retrieved -> all 0;  q4: nothing judged relevant -> all 0
# AP: q1 1, q2 (1/2) / 2 = 1/4, q3 0, q4 0. Grades are 1, so linear and exponential nDCG agree.
# mean: recall 0.375, precision 1/6 = 0.1667, mrr 0.375, map 0.3125, ndcg 0.34671, hit rate 0.5
BASELINE = result(
    row("q1", [1, 0, 0], [1], 3),
    row("q2", [0, 1, 0], [1, 1], 3),
    row("q3", [0, 0, 0], [2], 3),
    row("q4", [0, 0, 0], [], 3),
)
BETTER = result(
    row("q1", [1, 0, 0], [1], 3),
    row("q2", [1, 1, 0], [1, 1], 3),
    row("q3", [0, 0, 0], [2], 3),
    row("q4", [0, 0, 0], [], 3),
)


def test_table_is_pinned() -> None:
    assert format_table(BASELINE, "docs") == (
        "docs: 4 queries, k = 3\n"
        "metric        value\n"
        "recall@3     0.3750\n"
        "precision@3  0.1667\n"
        "mrr@3        0.3750\n"
        "map@3        0.3125\n"
        "map_uncut    0.3125\n"
        "ndcg@3       0.3467\n"
        "ndcg_exp@3   0.3467\n"
        "hit_rate@3   0.5000\n"
        "no relevant source in the top 3: q3\n"
        "judged with no relevant source (scored 0): q4\n"
        "ndcg: linear gain (trec_eval's ndcg_cut); ndcg_exp: gain 2^grade - 1; "
        "map: trec_eval's map_cut; map_uncut: trec_eval's map (whole ranking)"
    )


def test_table_of_one_perfect_query() -> None:
    assert format_table(result(row("only", [2], [2], 1), k=1), "kb").splitlines()[1:] == [
        "metric        value",
        "recall@1     1.0000",
        "precision@1  1.0000",
        "mrr@1        1.0000",
        "map@1        1.0000",
        "map_uncut    1.0000",
        "ndcg@1       1.0000",
        "ndcg_exp@1   1.0000",
        "hit_rate@1   1.0000",
        "ndcg: linear gain (trec_eval's ndcg_cut); ndcg_exp: gain 2^grade - 1; "
        "map: trec_eval's map_cut; map_uncut: trec_eval's map (whole ranking)",
    ]


def test_table_states_each_gain_and_they_differ_on_graded_judgements() -> None:
    # Grades [1, 2] against judged [2, 1] at k = 2 (worked out in test_metrics):
    # linear 2.26186 / 2.63093 = 0.85972, exponential 2.89279 / 3.63093 = 0.79671.
    lines = format_table(result(row("q", [1, 2], [2, 1], 2), k=2), "kb").splitlines()
    assert "ndcg@2       0.8597" in lines
    assert "ndcg_exp@2   0.7967" in lines
    assert lines[-1].startswith("ndcg: linear gain (trec_eval's ndcg_cut); ndcg_exp: gain 2^grade")


def test_comparison_is_pinned_with_signed_differences() -> None:
    # q2 in BETTER: both relevant at ranks 1-2 -> recall 1, precision 2/3, mrr 1, AP 1,
    # ndcg 1. mean recall 0.5 (+0.125), precision 0.25 (+0.0833), mrr 0.5 (+0.125),
    # map 0.5 (+0.1875), ndcg 0.5 (+0.15329), hit rate 0.5 (+0).
    # Only q2 differs: with one non-zero difference d, every one of the 2^4 sign
    # patterns has |sum| = |d|, so p = 1 and nothing is marked.
    assert format_comparison(BASELINE, BETTER, "local.yaml", "minilm.yaml") == (
        "4 queries, k = 3\n"
        "metric       local.yaml  minilm.yaml  difference       p\n"
        "recall@3         0.3750       0.5000     +0.1250  1.0000\n"
        "precision@3      0.1667       0.2500     +0.0833  1.0000\n"
        "mrr@3            0.3750       0.5000     +0.1250  1.0000\n"
        "map@3            0.3125       0.5000     +0.1875  1.0000\n"
        "map_uncut        0.3125       0.5000     +0.1875  1.0000\n"
        "ndcg@3           0.3467       0.5000     +0.1533  1.0000\n"
        "ndcg_exp@3       0.3467       0.5000     +0.1533  1.0000\n"
        "hit_rate@3       0.5000       0.5000     +0.0000  1.0000\n"
        "p: paired randomisation test, two-sided, exact over all 16 sign patterns; * p < 0.05\n"
        "ndcg: linear gain (trec_eval's ndcg_cut); ndcg_exp: gain 2^grade - 1; "
        "map: trec_eval's map_cut; map_uncut: trec_eval's map (whole ranking)"
    )
    reverse = format_comparison(BETTER, BASELINE, "B", "A").splitlines()
    assert reverse[2] == "recall@3     0.5000  0.3750     -0.1250  1.0000"


def test_comparison_marks_significant_differences() -> None:
    # 20 queries with one relevant source each. Left finds it at rank 2 on all of
    # them; right at rank 1 on the first 16 and at rank 2 on the other four.
    # MRR differences: +0.5 sixteen times, 0 four times: only a pattern giving the
    # sixteen one sign reaches |sum| = 8, a chance of 2 / 2^16 = 0.00003 a draw; none
    # of the 10,000 seeded draws does, so p = (0 + 1) / 10,001 = 0.0001, marked.
    # Recall and hit rate are 1 in both: p = 1.
    left = result(*[row(f"q{i}", [0, 1], [1], 2) for i in range(20)], k=2)
    right = result(*[row(f"q{i}", [1, 0] if i < 16 else [0, 1], [1], 2) for i in range(20)], k=2)
    lines = format_comparison(left, right, "a", "b").splitlines()
    assert lines[1] == "metric            a       b  difference       p"
    assert lines[2] == "recall@2     1.0000  1.0000     +0.0000  1.0000"
    assert lines[4] == "mrr@2        0.5000  0.9000     +0.4000  0.0001  *"
    # ndcg@2: left 1/log2(3) = 0.6309 everywhere; right (16 + 4 * 0.6309) / 20 = 0.9262.
    assert lines[7] == "ndcg@2       0.6309  0.9262     +0.2953  0.0001  *"
    assert lines[-2] == (
        "p: paired randomisation test, two-sided, 10,000 random sign patterns, seed 0; * p < 0.05"
    )


def test_comparison_needs_the_same_queries_and_k() -> None:
    with pytest.raises(ValueError, match="k = 3 with k = 1"):
        format_comparison(BASELINE, result(row("q1", [1], [1], 1), k=1), "a", "b")
    with pytest.raises(ValueError, match="different query sets"):
        format_comparison(BASELINE, result(row("q1", [1], [1], 3)), "a", "b")


def test_missed_thresholds_name_metric_value_and_threshold() -> None:
    thresholds = EvaluationThresholds(recall=0.5, precision=0.1, mrr=0.3, ndcg=0.35, hit_rate=0.9)
    # precision 0.1667 >= 0.1 and mrr 0.375 >= 0.3 are met; the other three are not.
    assert check_thresholds(BASELINE, thresholds) == [
        "recall@3 = 0.38 < 0.50",
        "ndcg@3 = 0.347 < 0.350",
        "hit_rate@3 = 0.50 < 0.90",
    ]


def test_values_that_round_alike_get_more_decimals() -> None:
    # ndcg 0.34671 against 0.35: two decimals would print "0.35 < 0.35".
    assert check_thresholds(BASELINE, {"ndcg": 0.35}) == ["ndcg@3 = 0.347 < 0.350"]
    # precision 1/6 = 0.1666667 against 0.16667: they differ from the sixth decimal.
    assert check_thresholds(BASELINE, {"precision": 0.16667}) == [
        "precision@3 = 0.166667 < 0.166670"
    ]


def test_met_thresholds_and_float_noise() -> None:
    assert check_thresholds(BASELINE, EvaluationThresholds()) == []
    assert check_thresholds(BASELINE, {"recall": 0.375, "hit_rate": 0.5, "mrr": None}) == []
    # Three queries at 0.1 average to 0.30000000000000004 or 0.29999999999999993 by
    # summation order; either meets a threshold of 0.3.
    noisy = EvaluationResult(k=1, queries=[], metrics=dict.fromkeys(BASELINE.metrics, 0.3 - 1e-16))
    assert check_thresholds(noisy, dict.fromkeys(BASELINE.metrics, 0.3)) == []


def test_unknown_threshold_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown metric"):
        check_thresholds(BASELINE, {"ndcg_linear": 0.5})


def test_map_and_both_ndcg_gains_have_thresholds() -> None:
    # Graded q: [1, 2] against judged [2, 1], k = 2: AP 1, ndcg 0.85972, ndcg_exp 0.79671.
    graded = result(row("q", [1, 2], [2, 1], 2), k=2)
    thresholds = EvaluationThresholds(map=1.0, ndcg=0.85, ndcg_exp=0.85)
    assert check_thresholds(graded, thresholds) == ["ndcg_exp@2 = 0.80 < 0.85"]
    assert check_thresholds(BASELINE, EvaluationThresholds(map=0.32)) == ["map@3 = 0.31 < 0.32"]


def test_as_dict_is_json() -> None:
    data = json.loads(json.dumps(BASELINE.as_dict()))
    assert data["k"] == 3
    assert data["query_count"] == 4
    assert data["no_relevant_count"] == 1
    assert data["metrics"]["recall"] == 0.375
    assert data["queries"][1]["ranking"][1] == {"source": "q2-1.md", "grade": 1, "score": 0.9}


def test_unknown_thresholds_are_listed_with_the_known_names() -> None:
    expected = (
        "unknown metric(s) a, b; expected recall, precision, mrr, map, map_uncut, ndcg, ndcg_exp, "
        "hit_rate"
    )
    with pytest.raises(ValueError) as error:
        check_thresholds(BASELINE, {"b": 0.5, "a": 0.5})
    assert str(error.value) == expected


def test_a_value_within_the_tolerance_below_its_threshold_meets_it() -> None:
    at_edge = EvaluationResult(k=1, queries=[], metrics=dict.fromkeys(BASELINE.metrics, 0.5))
    assert check_thresholds(at_edge, {"recall": 0.5 + 1e-9}) == []
    exactly = EvaluationResult(k=1, queries=[], metrics=dict.fromkeys(BASELINE.metrics, 0.7 - 1e-9))
    assert check_thresholds(exactly, {"recall": 0.7}) == []
    assert check_thresholds(at_edge, {"recall": 0.5 + 1e-8}) == [
        "recall@1 = 0.50000000 < 0.50000001"
    ]


def test_table_lists_every_missed_and_unanswerable_query() -> None:
    table = format_table(
        result(
            row("a", [0, 0, 0], [1], 3),
            row("b", [0, 0, 0], [1], 3),
            row("c", [0, 0, 0], [], 3),
            row("d", [0, 0, 0], [], 3),
        ),
        "kb",
    )
    assert "no relevant source in the top 3: a, b" in table.splitlines()
    assert "judged with no relevant source (scored 0): c, d" in table.splitlines()


def test_one_query_is_counted_in_the_singular() -> None:
    one = result(row("q1", [1, 0, 0], [1], 3))
    assert format_table(one, "kb").splitlines()[0] == "kb: 1 query, k = 3"
    assert format_comparison(one, one, "a", "b").splitlines()[0] == "1 query, k = 3"
    assert format_table(result(*BASELINE.queries[:2]), "kb").startswith("kb: 2 queries,")


def per_query(values: dict[str, float]) -> EvaluationResult:
    """One query whose every metric has the given value; the averages equal it."""
    metrics = dict.fromkeys(BASELINE.metrics, 0.0) | values
    query = QueryResult(id="q", query="q", relevant_count=1, metrics=metrics, ranking=[])
    return EvaluationResult(k=1, queries=[query], metrics=dict(metrics))


def difference_column(left: EvaluationResult, right: EvaluationResult) -> str:
    recall_line = next(
        line for line in format_comparison(left, right, "a", "b").splitlines() if "recall" in line
    )
    return recall_line.split()[3]


def test_a_difference_that_rounds_to_zero_shows_as_plus_zero() -> None:
    # 0.3 - (0.1 + 0.2) is -5.6e-17, and -0.00004 rounds to -0.0 at four decimals.
    assert difference_column(per_query({"recall": 0.1 + 0.2}), per_query({"recall": 0.3})) == (
        "+0.0000"
    )
    assert difference_column(per_query({"recall": 0.5}), per_query({"recall": 0.49996})) == (
        "+0.0000"
    )
    assert difference_column(per_query({"recall": 0.5}), per_query({"recall": 0.49994})) == (
        "-0.0001"
    )


def test_comparison_uses_the_permutations_and_seed_it_is_given() -> None:
    left = result(*(row(f"q{i}", [i % 2, 0, 0], [1], 3) for i in range(20)))
    right = result(*(row(f"q{i}", [1 - i % 3 // 2, 0, 0], [1], 3) for i in range(20)))
    for permutations, seed in ((7, 3), (50, 11)):
        text = format_comparison(left, right, "a", "b", permutations=permutations, seed=seed)
        p_column = [line.split()[4] for line in text.splitlines()[2:10]]
        expected = compare(left, right, permutations=permutations, seed=seed)
        assert p_column == [f"{row.p_value:.4f}" for row in expected]
        assert f"{permutations} random sign patterns, seed {seed};" in text
