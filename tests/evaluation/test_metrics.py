"""Metric arithmetic and the source ranking, against values computed by hand."""

from __future__ import annotations

import math

import pytest

from ragflow_config.evaluation import Judgement, RankedSource
from ragflow_config.evaluation._metrics import mean_metrics, score_ranking
from ragflow_config.evaluation._ranking import rank_sources
from ragflow_config.message import DataBlock, TextBlock
from ragflow_config.rag import Chunk, VectorSearchResult


def hit(source: str, score: float, text: str = "", index: int = 0) -> VectorSearchResult:
    chunk = Chunk(content=TextBlock(text=text), source=source, chunk_index=index, total_chunks=9)
    return VectorSearchResult(score=score, document_id=source, chunk=chunk)


def sources(ranking: list[RankedSource]) -> list[tuple[str, int]]:
    return [(entry.source, entry.grade) for entry in ranking]


def test_graded_ranking_with_misses() -> None:
    # Ranking grades [0, 3, 0, 1, 0]; judged grades 3, 2, 1 (R = 3); k = 5.
    metrics = score_ranking([0, 3, 0, 1, 0], [3, 2, 1], k=5)
    assert metrics["recall"] == pytest.approx(2 / 3)  # 2 of the 3 relevant are in the top 5
    assert metrics["precision"] == pytest.approx(2 / 5)  # 2 relevant of 5 listed
    assert metrics["mrr"] == pytest.approx(1 / 2)  # first relevant at rank 2
    assert metrics["hit_rate"] == 1.0
    # DCG  = (2^3-1)/log2(3) + (2^1-1)/log2(5) = 7/1.58496 + 1/2.32193 = 4.41651 + 0.43068 = 4.84718
    # IDCG = (2^3-1)/log2(2) + (2^2-1)/log2(3) + (2^1-1)/log2(4) = 7 + 1.89279 + 0.5 = 9.39279
    # nDCG = 4.84718 / 9.39279 = 0.51605
    assert metrics["ndcg"] == pytest.approx(0.51605, abs=1e-5)
    assert metrics["ndcg"] == pytest.approx(
        (7 / math.log2(3) + 1 / math.log2(5)) / (7 + 3 / math.log2(3) + 1 / 2)
    )


def test_perfect_ranking_scores_one() -> None:
    # Both relevant sources first, best grade first: DCG equals IDCG.
    metrics = score_ranking([2, 1, 0], [1, 2], k=3)
    assert metrics == {
        "recall": 1.0,
        "precision": pytest.approx(2 / 3),
        "mrr": 1.0,
        "ndcg": pytest.approx(1.0),
        "hit_rate": 1.0,
    }


def test_grades_out_of_order_lower_ndcg_only() -> None:
    # Grades [1, 2] against judged [2, 1]: same set, worse order.
    # DCG = 1/1 + 3/log2(3) = 1 + 1.89279 = 2.89279; IDCG = 3/1 + 1/log2(3) = 3 + 0.63093 = 3.63093
    metrics = score_ranking([1, 2], [2, 1], k=2)
    assert metrics["ndcg"] == pytest.approx(0.79671, abs=1e-5)
    assert (metrics["recall"], metrics["precision"], metrics["mrr"]) == (1.0, 1.0, 1.0)


def test_short_ranking_is_padded_with_non_relevant() -> None:
    # One hit, relevant, k = 5: precision = 1/5, as trec_eval pads a short list.
    metrics = score_ranking([1], [1], k=5)
    assert metrics == {"recall": 1.0, "precision": 0.2, "mrr": 1.0, "ndcg": 1.0, "hit_rate": 1.0}


def test_relevant_beyond_k_counts_for_nothing() -> None:
    # The relevant source is at rank 3, k = 2: MRR is cut at k, so 0, not 1/3.
    assert score_ranking([0, 0, 1], [1], k=2) == dict.fromkeys(
        ("recall", "precision", "mrr", "ndcg", "hit_rate"), 0.0
    )


def test_ideal_ranking_is_cut_at_k() -> None:
    # k = 1, judged grades 1 and 3; the ranking finds the grade-1 source first.
    # DCG = (2^1-1)/log2(2) = 1; IDCG keeps only the best: (2^3-1)/log2(2) = 7; nDCG = 1/7.
    # recall = 1 of 2 relevant = 0.5.
    metrics = score_ranking([1], [1, 3], k=1)
    assert metrics["ndcg"] == pytest.approx(1 / 7)
    assert metrics["recall"] == 0.5


def test_query_with_no_relevant_source_scores_zero() -> None:
    # R = 0: recall would be 0/0; like trec_eval every metric is 0.
    assert score_ranking([0, 0, 0], [], k=3) == dict.fromkeys(
        ("recall", "precision", "mrr", "ndcg", "hit_rate"), 0.0
    )
    assert score_ranking([], [], k=3)["ndcg"] == 0.0


def test_empty_ranking_scores_zero() -> None:
    assert set(score_ranking([], [2], k=3).values()) == {0.0}


def test_macro_average_weighs_queries_equally() -> None:
    one = score_ranking([1, 0], [1], k=2)  # recall 1, precision 1/2, mrr 1, hit 1
    two = score_ranking([0, 1], [1, 1], k=2)  # recall 1/2, precision 1/2, mrr 1/2, hit 1
    none = score_ranking([0, 0], [], k=2)  # all 0
    mean = mean_metrics([one, two, none])
    assert mean["recall"] == pytest.approx((1 + 0.5 + 0) / 3)  # 0.5
    assert mean["precision"] == pytest.approx((0.5 + 0.5 + 0) / 3)  # 1/3
    assert mean["mrr"] == pytest.approx((1 + 0.5 + 0) / 3)  # 0.5
    assert mean["hit_rate"] == pytest.approx(2 / 3)
    # nDCG of `two`: DCG = 1/log2(3) = 0.63093; IDCG = 1 + 1/log2(3) = 1.63093 -> 0.38685
    assert mean["ndcg"] == pytest.approx((1 + 0.38685 + 0) / 3, abs=1e-5)
    with pytest.raises(ValueError, match="no queries"):
        mean_metrics([])


# --- from hits to a ranking of sources ------------------------------------------------------


def test_duplicate_hits_of_one_source_count_once_at_the_first() -> None:
    hits = [hit("a", 0.9), hit("a", 0.8, index=1), hit("b", 0.7), hit("a", 0.6, index=2)]
    hits.append(hit("c", 0.5))
    ranking = rank_sources(hits, [Judgement(source="a", grade=2)], k=5)
    assert sources(ranking) == [("a", 2), ("b", 0), ("c", 0)]
    assert [entry.score for entry in ranking] == [0.9, 0.7, 0.5]  # the best hit of each


def test_ties_keep_the_search_order() -> None:
    hits = [hit("z", 0.5), hit("a", 0.5), hit("m", 0.5)]
    assert sources(rank_sources(hits, [], k=3)) == [("z", 0), ("a", 0), ("m", 0)]


def test_ranking_is_cut_at_k() -> None:
    hits = [hit(name, 1 - i / 10) for i, name in enumerate("abcdef")]
    assert [e.source for e in rank_sources(hits, [], k=3)] == ["a", "b", "c"]


def test_passages_decide_which_chunk_counts() -> None:
    judgement = Judgement(source="io.md", grade=3, passages=["not here", "for line in F"])
    hits = [
        hit("io.md", 0.9, "Open a file with open()."),  # right file, wrong chunk
        hit("other.md", 0.8, "for line in f"),  # right words, wrong file
        hit("io.md", 0.7, "Loop:\n   FOR  line\tin f:\n  print(line)", index=1),  # the answer
        hit("io.md", 0.6, "for line in f, again", index=2),  # already listed as relevant
    ]
    ranking = rank_sources(hits, [judgement], k=5)
    # The source's first, non-relevant hit keeps rank 1; the answer is found at rank 3.
    assert sources(ranking) == [("io.md", 0), ("other.md", 0), ("io.md", 3)]
    assert score_ranking([e.grade for e in ranking], [3], k=5)["mrr"] == pytest.approx(1 / 3)


def test_non_relevant_repeats_of_a_source_are_dropped() -> None:
    judgement = Judgement(source="io.md", passages=["answer"])
    hits = [hit("io.md", 0.9, "intro"), hit("io.md", 0.8, "more intro", index=1)]
    hits.append(hit("b.md", 0.7))
    assert sources(rank_sources(hits, [judgement], k=5)) == [("io.md", 0), ("b.md", 0)]


def test_non_text_chunks_never_contain_a_passage() -> None:
    image = DataBlock.from_bytes(b"\x89PNG\r\n\x1a\n", "image/png", name="answer.png")
    chunk = Chunk(content=image, source="fig.png", chunk_index=0, total_chunks=1)
    hits = [VectorSearchResult(score=0.9, document_id="fig", chunk=chunk)]
    with_passage = Judgement(source="fig.png", passages=["answer"])
    assert sources(rank_sources(hits, [with_passage], k=1)) == [("fig.png", 0)]
    assert sources(rank_sources(hits, [Judgement(source="fig.png")], k=1)) == [("fig.png", 1)]
