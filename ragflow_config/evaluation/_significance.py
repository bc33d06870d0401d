"""Is a difference between two runs real? A paired randomisation test over per-query values.

Under the null hypothesis the two runs are interchangeable, so each query's
difference (right minus left) is as likely to have either sign. The test
flips the signs at random and counts how often the mean difference is at
least as far from zero as the observed one (two-sided). With n queries there
are 2^n sign patterns: when that is at most ``permutations`` every pattern is
counted once (the exact test, p = count / 2^n); otherwise ``permutations``
random patterns are drawn from a generator seeded with ``seed`` and
p = (count + 1) / (permutations + 1), never 0. Identical runs give p = 1.

Written here rather than taken from ``ranx`` (which has this test and the
paired t-test): ``ranx`` 0.3.21 pulls numba, llvmlite, pandas, scipy,
seaborn and ir-datasets (675 MB and 96 s of install in a fresh virtual
environment), where this needs the standard library only. The sign
patterns are applied through tables of the 256 partial sums of each 8
queries, so 10,000 patterns over 30 queries and 7 metrics take about 0.06
CPU seconds.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ._metrics import METRICS
from ._results import EvaluationResult

PERMUTATIONS = 10_000
"""Random sign patterns drawn when the exact test would need more."""

SEED = 0
"""The generator's seed: the same inputs always give the same p-values."""

SIGNIFICANCE_LEVEL = 0.05
"""A difference with p below this is marked significant."""

# Sums of metric values differ by rounding with the order of addition; a
# permuted sum this close to the observed one is as extreme as it.
_TOLERANCE = 1e-9
# Queries per lookup table: each table holds the 256 partial sums of 8 differences.
_BITS = 8


def randomization_test(
    differences: Mapping[str, Sequence[float]],
    *,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
) -> dict[str, float]:
    """The two-sided p-value of each metric's paired differences (one value per query).

    Every metric is tested on the same sign patterns. All sequences must have
    the same length, at least 1.
    """
    if permutations < 1:
        raise ValueError(f"permutations must be at least 1, got {permutations}")
    lengths = {len(values) for values in differences.values()}
    if len(lengths) > 1:
        raise ValueError("every metric needs one difference per query")
    n = lengths.pop() if lengths else 0
    if not n:
        raise ValueError("no queries to test")
    tables = {name: _tables(values) for name, values in differences.items()}
    totals = {name: sum(values) for name, values in differences.items()}
    observed = {name: abs(total) - _TOLERANCE for name, total in totals.items()}
    extreme = dict.fromkeys(differences, 0)
    exact = _exact(n, permutations)
    generator = random.Random(seed)
    patterns = range(2**n) if exact else (generator.getrandbits(n) for _ in range(permutations))
    chunks = range((n + _BITS - 1) // _BITS)
    for pattern in patterns:
        # A set bit i flips the sign of query i's difference.
        parts = [(pattern >> (_BITS * chunk)) & 0xFF for chunk in chunks]
        for name, table in tables.items():
            flipped = sum(table[chunk][part] for chunk, part in enumerate(parts))
            if abs(totals[name] - 2 * flipped) >= observed[name]:
                extreme[name] += 1
    if exact:
        return {name: count / 2**n for name, count in extreme.items()}
    return {name: (count + 1) / (permutations + 1) for name, count in extreme.items()}


def describe_test(query_count: int, permutations: int = PERMUTATIONS, seed: int = SEED) -> str:
    """How :func:`randomization_test` computes p for this many queries, in one phrase."""
    if _exact(query_count, permutations):
        patterns = f"exact over all {2**query_count:,} sign patterns"
    else:
        patterns = f"{permutations:,} random sign patterns, seed {seed}"
    return f"paired randomisation test, two-sided, {patterns}"


def _exact(query_count: int, permutations: int) -> bool:
    return bool(2**query_count <= permutations)


def _tables(values: Sequence[float]) -> list[list[float]]:
    """For each run of 8 queries, the sum of the differences selected by each byte."""
    tables = []
    for start in range(0, len(values), _BITS):
        run = values[start : start + _BITS]
        sums = [0.0] * 256
        for mask in range(1, 256):
            low = mask & -mask
            index = low.bit_length() - 1
            sums[mask] = sums[mask ^ low] + (run[index] if index < len(run) else 0.0)
        tables.append(sums)
    return tables


@dataclass(frozen=True)
class MetricComparison:
    """One metric of two runs: both means, their difference (right - left) and its p-value."""

    metric: str
    left: float
    right: float
    difference: float
    p_value: float

    @property
    def significant(self) -> bool:
        return self.p_value < SIGNIFICANCE_LEVEL


def compare(
    left: EvaluationResult,
    right: EvaluationResult,
    *,
    permutations: int = PERMUTATIONS,
    seed: int = SEED,
) -> list[MetricComparison]:
    """Each metric of two runs of one query set, queries paired by id, in ``METRICS`` order."""
    if left.k != right.k:
        raise ValueError(f"cannot compare k = {left.k} with k = {right.k}")
    by_id = {row.id: row for row in right.queries}
    if sorted(row.id for row in left.queries) != sorted(by_id):
        raise ValueError("cannot compare results of different query sets")
    pairs = [(row, by_id[row.id]) for row in left.queries]
    differences = {
        name: [after.metrics[name] - before.metrics[name] for before, after in pairs]
        for name in METRICS
    }
    p_values = randomization_test(differences, permutations=permutations, seed=seed)
    return [
        MetricComparison(
            metric=name,
            left=left.metrics[name],
            right=right.metrics[name],
            difference=right.metrics[name] - left.metrics[name],
            p_value=p_values[name],
        )
        for name in METRICS
    ]
