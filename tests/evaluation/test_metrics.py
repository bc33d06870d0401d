"""Metric arithmetic and the source ranking, against values computed by hand."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ragflow_config.evaluation import METRICS, Judgement, RankedSource, load_queries
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
    # AP: relevant at ranks 2 and 4, precision there 1/2 and 2/4; (1/2 + 1/2) / R = 1/3.
    assert metrics["map"] == pytest.approx(1 / 3)
    # Linear gain (trec_eval's ndcg_cut): the gain is the grade.
    # DCG  = 3/log2(3) + 1/log2(5) = 1.89279 + 0.43068 = 2.32347
    # IDCG = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.26186 + 0.5 = 4.76186
    # nDCG = 2.32347 / 4.76186 = 0.48793
    assert metrics["ndcg"] == pytest.approx(0.48793, abs=1e-5)
    assert metrics["ndcg"] == pytest.approx(
        (3 / math.log2(3) + 1 / math.log2(5)) / (3 + 2 / math.log2(3) + 1 / 2)
    )
    # Exponential gain 2^g - 1:
    # DCG  = (2^3-1)/log2(3) + (2^1-1)/log2(5) = 7/1.58496 + 1/2.32193 = 4.41651 + 0.43068 = 4.84718
    # IDCG = (2^3-1)/log2(2) + (2^2-1)/log2(3) + (2^1-1)/log2(4) = 7 + 1.89279 + 0.5 = 9.39279
    # nDCG = 4.84718 / 9.39279 = 0.51605
    assert metrics["ndcg_exp"] == pytest.approx(0.51605, abs=1e-5)
    assert metrics["ndcg_exp"] == pytest.approx(
        (7 / math.log2(3) + 1 / math.log2(5)) / (7 + 3 / math.log2(3) + 1 / 2)
    )


def test_perfect_ranking_scores_one() -> None:
    # Both relevant sources first, best grade first: DCG equals IDCG.
    metrics = score_ranking([2, 1, 0], [1, 2], k=3)
    assert metrics == {
        "recall": 1.0,
        "precision": pytest.approx(2 / 3),
        "mrr": 1.0,
        "map": 1.0,
        "map_uncut": 1.0,
        "ndcg": pytest.approx(1.0),
        "ndcg_exp": pytest.approx(1.0),
        "hit_rate": 1.0,
    }


def test_grades_out_of_order_lower_ndcg_only() -> None:
    # Grades [1, 2] against judged [2, 1]: same set, worse order.
    # Exponential: DCG = 1/1 + 3/log2(3) = 2.89279; IDCG = 3/1 + 1/log2(3) = 3.63093 -> 0.79671
    # Linear:      DCG = 1/1 + 2/log2(3) = 2.26186; IDCG = 2/1 + 1/log2(3) = 2.63093 -> 0.85972
    metrics = score_ranking([1, 2], [2, 1], k=2)
    assert metrics["ndcg_exp"] == pytest.approx(0.79671, abs=1e-5)
    assert metrics["ndcg"] == pytest.approx(0.85972, abs=1e-5)
    # Binary measures see the same set of relevant sources.
    assert (metrics["recall"], metrics["precision"], metrics["mrr"], metrics["map"]) == (1, 1, 1, 1)


def test_short_ranking_is_padded_with_non_relevant() -> None:
    # One hit, relevant, k = 5: precision = 1/5, as trec_eval pads a short list.
    metrics = score_ranking([1], [1], k=5)
    assert metrics == {
        "recall": 1.0,
        "precision": 0.2,
        "mrr": 1.0,
        "map": 1.0,
        "map_uncut": 1.0,
        "ndcg": 1.0,
        "ndcg_exp": 1.0,
        "hit_rate": 1.0,
    }


def test_relevant_beyond_k_counts_for_nothing() -> None:
    # The relevant source is at rank 3, k = 2: MRR is cut at k, so 0, not 1/3;
    # map_cut_2 is 0 too; only the uncut AP sees it: (1/3) / 1.
    assert score_ranking([0, 0, 1], [1], k=2) == dict.fromkeys(METRICS, 0.0) | {
        "map_uncut": pytest.approx(1 / 3)
    }


def test_ideal_ranking_is_cut_at_k() -> None:
    # k = 1, judged grades 1 and 3; the ranking finds the grade-1 source first.
    # Exponential: DCG = (2^1-1)/log2(2) = 1; IDCG keeps only the best: 2^3-1 = 7; nDCG = 1/7.
    # Linear: DCG = 1; IDCG = 3; nDCG = 1/3. recall = 1 of 2 relevant = 0.5.
    metrics = score_ranking([1], [1, 3], k=1)
    assert metrics["ndcg_exp"] == pytest.approx(1 / 7)
    assert metrics["ndcg"] == pytest.approx(1 / 3)
    assert metrics["recall"] == 0.5


def test_query_with_no_relevant_source_scores_zero() -> None:
    # R = 0: recall and AP would be 0/0, IDCG is 0; like trec_eval every metric is 0.
    assert score_ranking([0, 0, 0], [], k=3) == dict.fromkeys(METRICS, 0.0)
    assert score_ranking([], [], k=3) == dict.fromkeys(METRICS, 0.0)


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
    # AP of `two`: precision 1/2 at rank 2, over R = 2 -> 1/4.
    assert mean["map"] == pytest.approx((1 + 0.25 + 0) / 3)
    with pytest.raises(ValueError, match="no queries"):
        mean_metrics([])


def test_average_precision_is_divided_by_every_relevant_source_not_by_k() -> None:
    # trec_eval's map_cut_2: grades [1, 1], R = 4 -> (1/1 + 2/2) / 4 = 0.5.
    # Dividing by min(k, R) = 2 (another common "AP@k") would give 1.0.
    assert score_ranking([1, 1, 1], [1, 1, 1, 1], k=2)["map"] == 0.5
    # Graded relevance is binary for AP: any grade > 0 is relevant.
    # [3, 0, 1], R = 3: (1/1 + 2/3) / 3 = 5/9.
    assert score_ranking([3, 0, 1], [3, 1, 2], k=3)["map"] == pytest.approx(5 / 9)


def test_binary_judgements_give_equal_linear_and_exponential_ndcg() -> None:
    # With every grade 1, 2^1 - 1 = 1: the gains agree. [0, 1, 1], R = 3:
    # DCG = 1/log2(3) + 1/log2(4) = 0.63093 + 0.5 = 1.13093;
    # IDCG = 1 + 0.63093 + 0.5 = 2.13093 -> 0.53072.
    metrics = score_ranking([0, 1, 1], [1, 1, 1], k=3)
    assert metrics["ndcg"] == metrics["ndcg_exp"] == pytest.approx(0.53072, abs=1e-5)


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


def test_unjudged_and_judged_non_relevant_sources_count_alike(tmp_path: Path) -> None:
    # trec_eval treats a retrieved document missing from the qrels as not relevant,
    # the same as one judged with grade 0 (or a negative grade).
    (tmp_path / "topics").write_text("1\tcats\n", encoding="utf-8")
    with_zero = tmp_path / "qrels-zero"
    with_zero.write_text("1 0 cats.md 1\n1 0 dogs.md 0\n1 0 tea.md -1\n", encoding="utf-8")
    only_relevant = tmp_path / "qrels-one"
    only_relevant.write_text("1 0 cats.md 1\n", encoding="utf-8")
    hits = [hit("dogs.md", 0.9), hit("tea.md", 0.8), hit("cats.md", 0.7), hit("emu.md", 0.6)]
    scores = []
    for qrels in (with_zero, only_relevant):
        (query,) = load_queries(qrels, tmp_path / "topics")
        ranking = rank_sources(hits, query.relevant, k=4)
        scores.append(score_ranking([e.grade for e in ranking], [1], k=4))
    # cats.md at rank 3 of 4, R = 1: AP = 1/3, nDCG = 1/log2(4) = 0.5, precision 1/4.
    assert scores[0] == scores[1]
    assert scores[0]["map"] == pytest.approx(1 / 3)
    assert scores[0]["ndcg"] == scores[0]["ndcg_exp"] == pytest.approx(0.5)
    assert scores[0]["precision"] == 0.25


def test_tied_scores_keep_the_search_order_unlike_trec_eval() -> None:
    # Three hits with one score. trec_eval would sort the tie by document id,
    # descending (c, b, a), and find the relevant a.md at rank 3 (AP 1/3);
    # here the knowledge base's order (a, b, c) stands: a.md at rank 1.
    hits = [hit("a.md", 0.5), hit("b.md", 0.5), hit("c.md", 0.5)]
    ranking = rank_sources(hits, [Judgement(source="a.md")], k=3)
    assert sources(ranking) == [("a.md", 1), ("b.md", 0), ("c.md", 0)]
    metrics = score_ranking([e.grade for e in ranking], [1], k=3)
    assert (metrics["map"], metrics["mrr"], metrics["ndcg"]) == (1.0, 1.0, 1.0)
