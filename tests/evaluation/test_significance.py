"""The paired randomisation test: p-values worked out by hand, and its edge cases."""

from __future__ import annotations

import itertools

import pytest

from ragflow_config.evaluation import (
    METRICS,
    EvaluationResult,
    QueryResult,
    compare,
    describe_test,
    randomization_test,
)
from ragflow_config.evaluation._metrics import mean_metrics, score_ranking


def run(rankings: dict[str, list[int]], k: int = 2) -> EvaluationResult:
    """One relevant source per query; ``rankings`` maps query id -> grades of the top k."""
    rows = [
        QueryResult(
            id=query_id,
            query=query_id,
            relevant_count=1,
            metrics=score_ranking(grades, [1], k),
            ranking=[],
        )
        for query_id, grades in rankings.items()
    ]
    return EvaluationResult(k=k, queries=rows, metrics=mean_metrics([r.metrics for r in rows]))


def brute_force(differences: list[float]) -> float:
    """The exact two-sided p-value, the slow way: every sign pattern, counted."""
    observed = abs(sum(differences))
    patterns = list(itertools.product((1, -1), repeat=len(differences)))
    extreme = sum(
        1
        for signs in patterns
        if abs(sum(s * d for s, d in zip(signs, differences, strict=True))) >= observed - 1e-9
    )
    return extreme / len(patterns)


def test_identical_runs_have_p_one() -> None:
    left = run({f"q{i}": [i % 2, 1 - i % 2] for i in range(30)})
    rows = compare(left, left)
    assert [row.metric for row in rows] == list(METRICS)
    assert all(row.p_value == 1.0 and row.difference == 0 for row in rows)
    assert not any(row.significant for row in rows)
    # The same with a small query set, where the test is exact.
    assert randomization_test({"recall": [0.0, 0.0, 0.0]}) == {"recall": 1.0}


def test_three_equal_gains_by_hand() -> None:
    # Differences (0.5, 0.5, 0.5): 2^3 = 8 sign patterns. Sums: +1.5 once, +0.5 three
    # times, -0.5 three times, -1.5 once. |sum| >= 1.5 in 2 of 8: p = 0.25.
    assert randomization_test({"m": [0.5, 0.5, 0.5]}) == {"m": 0.25}


def test_zero_differences_do_not_count_and_signs_pair_by_query() -> None:
    # (1, 0, 0, 0.2): |observed sum| = 1.2. The zeros never change a sum; of the four
    # sign choices of (1, 0.2), ±1.2 reach 1.2 and ±0.8 do not: p = 8/16 = 0.5.
    assert randomization_test({"m": [1.0, 0.0, 0.0, 0.2]}) == {"m": 0.5}
    # (1, -1): the sum is 0, every pattern is as extreme: p = 1.
    assert randomization_test({"m": [1.0, -1.0]}) == {"m": 1.0}


@pytest.mark.parametrize("size", [9, 13])
def test_exact_test_counts_every_pattern(size: int) -> None:
    # 9 queries span two 8-query lookup tables; 13 is the largest exact size (8,192 <= 10,000).
    differences = [0.1 * (i % 4) - 0.12 for i in range(size)]
    differences[0] = 0.9
    (p,) = randomization_test({"m": differences}).values()
    assert p == pytest.approx(brute_force(differences))
    assert describe_test(size).endswith(f"exact over all {2**size:,} sign patterns")


def test_sampled_p_is_close_to_the_exact_one() -> None:
    # 14 queries: 16,384 patterns > 10,000, so patterns are sampled.
    differences = [0.3, -0.1, 0.2, 0.25, -0.05, 0.1, 0.0, 0.15, -0.2, 0.3, 0.05, -0.1, 0.2, 0.1]
    exact = randomization_test({"m": differences}, permutations=2**14)["m"]
    assert exact == pytest.approx(brute_force(differences))
    sampled = randomization_test({"m": differences})["m"]
    # Standard error of a proportion near 0.03 from 10,000 draws: 0.0017.
    assert sampled == pytest.approx(exact, abs=0.01)
    assert sampled != exact
    assert describe_test(14) == (
        "paired randomisation test, two-sided, 10,000 random sign patterns, seed 0"
    )


def test_a_clearly_better_run_on_many_queries_has_a_small_p() -> None:
    # 40 queries; the right run finds the answer at rank 1 where the left finds it
    # at rank 2 on 30 of them, and both agree on the other 10.
    left = run({f"q{i}": [0, 1] if i < 30 else [1, 0] for i in range(40)})
    right = run({f"q{i}": [1, 0] for i in range(40)})
    rows = {row.metric: row for row in compare(left, right)}
    # Every one of the 30 differences is +0.5 for MRR: no sampled pattern of
    # 2^40 is as extreme (2 of them are), so p = (0 + 1) / (10,000 + 1).
    assert rows["mrr"].difference == pytest.approx(30 * 0.5 / 40)
    assert rows["mrr"].p_value == pytest.approx(1 / 10_001)
    assert rows["mrr"].significant
    # Recall and hit rate do not change: p = 1, not significant.
    assert rows["recall"].p_value == rows["hit_rate"].p_value == 1.0
    assert not rows["recall"].significant


def test_p_values_are_deterministic_given_the_seed() -> None:
    differences = {"m": [0.3, -0.2, 0.25, 0.1, -0.05, 0.2, 0.15, -0.1, 0.05, 0.2] * 3}
    first = randomization_test(differences, seed=7)
    assert randomization_test(differences, seed=7) == first
    assert randomization_test(differences) == randomization_test(differences, seed=0)
    assert randomization_test(differences, seed=8) != first
    assert 0.001 < first["m"] < 0.05


def test_queries_pair_by_id_not_by_position() -> None:
    # MRR: left a 0, b 1/2, c 1/2; right a 1, b 1/2, c 1/2, listed b, a, c.
    # By id the differences are (1, 0, 0): one non-zero difference, p = 1.
    # Paired by position they would be (1/2, 1/2, 0): p = 2/4 = 0.5.
    left = run({"a": [0, 0], "b": [0, 1], "c": [0, 1]})
    right = run({"b": [0, 1], "a": [1, 0], "c": [0, 1]})
    mrr = next(row for row in compare(left, right) if row.metric == "mrr")
    assert mrr.difference == pytest.approx(1 / 3)
    assert mrr.p_value == 1.0
    same = run({"c": [0, 1], "a": [0, 0], "b": [0, 1]})
    assert all(row.p_value == 1.0 and row.difference == 0 for row in compare(left, same))


def test_comparing_different_query_sets_or_k_is_refused() -> None:
    left = run({"a": [1, 0], "b": [0, 1]})
    with pytest.raises(ValueError, match="different query sets"):
        compare(left, run({"a": [1, 0], "z": [0, 1]}))
    with pytest.raises(ValueError, match="k = 2 with k = 3"):
        compare(left, run({"a": [1, 0, 0], "b": [0, 1, 0]}, k=3))
    with pytest.raises(ValueError, match="one difference per query"):
        randomization_test({"m": [0.1], "n": [0.1, 0.2]})
    with pytest.raises(ValueError, match="no queries"):
        randomization_test({"m": []})


@pytest.mark.parametrize("n", [1, 2, 7, 8, 9, 10, 12])
def test_exact_p_values_equal_brute_force_for_any_query_count(n: int) -> None:
    # Distinct values, so a difference dropped or counted twice changes which patterns are extreme.
    differences = [((i * 7) % 11 - 5) / 10 + i / 1000 for i in range(n)]
    assert randomization_test({"m": differences}) == {"m": pytest.approx(brute_force(differences))}


def test_a_single_permutation_is_allowed() -> None:
    # p = (count + 1) / (permutations + 1): 1/2 or 1 with one random pattern.
    p = randomization_test({"m": [0.5] * 20}, permutations=1)["m"]
    assert p in (0.5, 1.0)


def test_argument_errors_say_what_is_wrong() -> None:
    with pytest.raises(ValueError, match=r"^permutations must be at least 1, got 0$"):
        randomization_test({"m": [0.5]}, permutations=0)
    with pytest.raises(ValueError, match=r"^every metric needs one difference per query$"):
        randomization_test({"a": [0.5], "b": [0.5, 0.5]})
    with pytest.raises(ValueError, match=r"^no queries to test$"):
        randomization_test({"m": []})
    with pytest.raises(ValueError, match=r"^no queries to test$"):
        randomization_test({})
    left = run({"q1": [1, 0]})
    with pytest.raises(ValueError, match=r"^cannot compare results of different query sets$"):
        compare(left, run({"q2": [1, 0]}))
    with pytest.raises(ValueError, match=r"^no queries to average$"):
        mean_metrics([])


def test_compare_draws_the_patterns_it_is_given() -> None:
    left = run({f"q{i}": [i % 2, 0] for i in range(20)})
    right = run({f"q{i}": [1 - i % 3 // 2, 0] for i in range(20)})
    differences = {
        name: [
            after.metrics[name] - before.metrics[name]
            for before, after in zip(left.queries, right.queries, strict=True)
        ]
        for name in METRICS
    }
    for permutations, seed in ((7, 3), (7, 4), (50, 11)):
        expected = randomization_test(differences, permutations=permutations, seed=seed)
        rows = compare(left, right, permutations=permutations, seed=seed)
        assert {row.metric: row.p_value for row in rows} == expected
    # The seeds above give different p-values, so a seed left out would show.
    assert randomization_test(differences, permutations=7, seed=3) != randomization_test(
        differences, permutations=7, seed=4
    )
