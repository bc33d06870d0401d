"""Retrieval quality: run a judged query set through a knowledge base and score the rankings.

A judged query set lists queries and, for each, the sources (files) that
answer it, with an optional grade (graded relevance, default 1) and optional
passages: substrings one of which a chunk must contain to count. It is read
from YAML, JSONL or TREC qrels plus a topics file (:func:`load_queries`).

Ranking
-------
:func:`evaluate` sends each query alone through ``KnowledgeBase.search``, the
call agents make, and keeps the order it returns; hits with equal scores stay
in that order (the sort is stable). Hits are chunks; metrics are computed on
the ranking of **sources** they yield: each source is listed once, at its
first (best) hit, so several chunks of one file count once. A hit is relevant
when its source is judged and, if the judgement names passages, its text
contains one of them (case-insensitive, whitespace-normalised); when a
source's first hit is not relevant but a later one is, the later hit is
listed too, at its own rank. The ranking is cut at ``k``; the search asks for
``4 * k`` hits (as an agent's search would: a hybrid search fuses the same
candidates), and more (up to 1000) while fewer than ``k`` sources came back.
``map_uncut`` reads a second search's ranking of ``depth`` sources (default
1000, trec_eval's number of hits; ``4 * depth`` hits asked for).

Metrics
-------
For one query with ranking r_1..r_k, grades g_i (0 when r_i is not relevant)
and R relevant sources:

- ``recall@k`` = relevant sources in the top k / R.
- ``precision@k`` = relevant sources in the top k / k; a ranking shorter
  than k is padded with non-relevant entries (as trec_eval does).
- ``hit_rate@k`` = 1 if any of the top k is relevant, else 0.
- ``mrr@k`` = 1 / rank of the first relevant source; 0 when none is in the
  top k (the reciprocal rank is cut at k, unlike trec_eval's).
- ``map@k`` = average precision over the top k, trec_eval's ``map_cut_k``:
  the sum of precision@i at each rank i <= k holding a relevant source,
  divided by R (not by min(k, R)), so relevant sources below k add 0.
- ``map_uncut`` = the same over the whole ranking (``depth`` sources),
  trec_eval's ``map``; the figure IR papers quote as MAP.
- ``ndcg@k`` = DCG@k / IDCG@k with **linear gain**, trec_eval's
  ``ndcg_cut_k``: DCG@k = sum over i <= k of g_i / log2(i + 1), and IDCG@k
  the DCG of the judged grades sorted best first (the ideal ranking).
- ``ndcg_exp@k``: the same with **exponential gain** 2^g_i - 1 (Burges et
  al.), which weighs high grades more. With binary judgements (every grade
  1) the two are equal.

Each metric of the result is the macro average: the mean over queries. A
query judged to have no relevant source scores 0 on every metric and counts
in the averages, as in trec_eval; ``EvaluationResult.no_relevant_count``
reports how many there are. A source that is not judged counts as not
relevant, as does one judged with grade 0.

Ties: trec_eval sorts a run by score and breaks ties by document id; here
the knowledge base's order is kept, since that is the order an agent reads.

Comparing two runs
------------------
:func:`compare` pairs the per-query values of two runs of one query set and
gives each metric's difference a two-sided p-value from a paired
randomisation test (exact for up to 13 queries, else 10,000 random sign
patterns with a fixed seed, so the p-values are reproducible);
:func:`format_comparison` prints them and marks p < 0.05 with ``*``;
:func:`format_comparison_markdown` makes them a Markdown table and a verdict.

Against a git ref
-----------------
:func:`evaluate_against` measures one pipeline file as it is at a git ref and
in the working tree, each indexed into its own temporary collections, both on
the working tree's judged queries (see ``_against``).
"""

from ._against import AgainstError, AgainstReport, GitVersion, evaluate_against
from ._evaluate import evaluate
from ._metrics import METRICS, metric_label
from ._queries import JudgedQuery, Judgement, load_queries
from ._report import (
    check_thresholds,
    comparison_verdict,
    format_comparison,
    format_comparison_markdown,
    format_table,
)
from ._results import EvaluationResult, QueryResult, RankedSource
from ._significance import MetricComparison, compare, describe_test, randomization_test

__all__ = [
    "METRICS",
    "AgainstError",
    "AgainstReport",
    "EvaluationResult",
    "GitVersion",
    "JudgedQuery",
    "Judgement",
    "MetricComparison",
    "QueryResult",
    "RankedSource",
    "check_thresholds",
    "compare",
    "comparison_verdict",
    "describe_test",
    "evaluate",
    "evaluate_against",
    "format_comparison",
    "format_comparison_markdown",
    "format_table",
    "load_queries",
    "metric_label",
    "randomization_test",
]
