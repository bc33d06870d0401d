"""Lexical and hybrid retrieval: the analyzer, BM25 scores, fusion, scope and updates.

On a real local Qdrant (in memory and on disk) with the hashing model; the
expected BM25 scores are computed here from the textbook formula.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest
from pydantic import ValidationError

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import Base64Source, DataBlock, TextBlock
from ragflow_config.rag import (
    Chunk,
    CollectionMismatchError,
    KnowledgeBase,
    QdrantStore,
    RetrievalSettings,
    VectorSearchResult,
)
from ragflow_config.rag._analyzer import Analyzer, AnalyzerSettings
from ragflow_config.rag._retrieval import FusionSettings, fuse

DOCS = {
    "cats": "Cats sleep on warm windows, and sleeping cats purr.",
    "dogs": "Dogs chase the cats of the garden; the garden dogs bark at cats.",
    "fish": "Goldfish swim slowly in a warm pond.",
    "birds": "Parrots whistle tunes and learn many words every morning in the garden.",
}


def chunk(text: str, source: str, **metadata: Any) -> list[Chunk]:
    block = TextBlock(text=text)
    return [Chunk(content=block, source=source, chunk_index=0, total_chunks=1, metadata=metadata)]


def knowledge_base(
    store: QdrantStore, mode: str, collection: str = "kb", **more: Any
) -> KnowledgeBase:
    settings = RetrievalSettings.model_validate({"mode": mode, **more.pop("retrieval", {})})
    return KnowledgeBase(
        name="kb",
        description="",
        embedding_model=HashingEmbeddingModel(dimensions=64),
        vector_store=store,
        collection=collection,
        retrieval=settings,
        **more,
    )


async def fill(kb: KnowledgeBase, docs: dict[str, str] = DOCS, **metadata: Any) -> None:
    for name, text in docs.items():
        await kb.insert_document(chunk(text, f"{name}.txt", **metadata), document_id=name)


def bm25(query: str, docs: dict[str, str], k1: float = 1.2, b: float = 0.75, avgdl: float = 100):
    """Textbook BM25 (Lucene's IDF) of every document holding a query term."""
    analyzer = Analyzer()
    terms = {name: analyzer.terms(text) for name, text in docs.items()}
    scores = {}
    for name, words in terms.items():
        tf = Counter(words)
        score = 0.0
        for term, count in Counter(analyzer.terms(query)).items():
            n = sum(term in other for other in terms.values())
            if tf[term] == 0:
                continue
            idf = math.log(1 + (len(docs) - n + 0.5) / (n + 0.5))
            score += (
                count
                * idf
                * tf[term]
                * (k1 + 1)
                / (tf[term] + k1 * (1 - b + b * len(words) / avgdl))
            )
        if score > 0:
            scores[name] = score
    return scores


def scores(hits: list[VectorSearchResult]) -> dict[str, float]:
    return {hit.document_id: hit.score for hit in hits}


def test_the_analyzer_lowercases_drops_stop_words_and_stems() -> None:
    analyzer = Analyzer()
    assert analyzer.terms("The Cats' sleeping, and they DON'T purr in 2024!") == [
        "cat",
        "sleep",
        "purr",
        "2024",
    ]
    assert Analyzer(AnalyzerSettings(stemming=False, stop_words=False)).terms("The Cats") == [
        "the",
        "cats",
    ]
    # Ids are stored, so they must never change between versions or machines.
    # (the first 8 bytes of blake2b(term), big-endian, modulo 2**29)
    assert analyzer.term_id("cat") == Analyzer().term_id("cat") == 463_312_943


def test_a_language_without_a_built_in_stop_list_needs_one() -> None:
    with pytest.raises(ValidationError, match="no built-in stop words for 'german'"):
        AnalyzerSettings(language="german")
    assert Analyzer(AnalyzerSettings(language="german", stop_words=["die"])).terms(
        "die Katzen schlafen"
    ) == ["katz", "schlaf"]


async def test_lexical_scores_are_bm25(store: QdrantStore) -> None:
    kb = knowledge_base(store, "lexical")
    await fill(kb)
    for query in ["sleeping cats", "warm garden", "cats cats dogs"]:
        expected = bm25(query, DOCS)
        hits = await kb.search([query], top_k=10)
        assert scores(hits) == pytest.approx(expected, rel=1e-5)
        assert [h.document_id for h in hits] == sorted(expected, key=lambda n: -expected[n])


async def test_bm25_settings_change_the_weights(store: QdrantStore) -> None:
    settings = {"bm25": {"k1": 2.0, "b": 0.3, "avg_length": 7}}
    kb = knowledge_base(store, "lexical", retrieval=settings)
    await fill(kb)
    hits = await kb.search(["garden dogs"], top_k=10)
    assert scores(hits) == pytest.approx(bm25("garden dogs", DOCS, 2.0, 0.3, 7), rel=1e-5)


async def test_idf_counts_the_knowledge_base_scope_and_hits_stay_in_it(
    store: QdrantStore,
) -> None:
    mine = knowledge_base(store, "lexical", metadata_filter={"tenant": "a"})
    theirs = knowledge_base(store, "lexical", metadata_filter={"tenant": "b"})
    await fill(mine)
    # Another tenant's many cats must change neither what we find nor how it scores.
    await fill(theirs, {f"other{i}": "cats cats garden" for i in range(6)})
    hits = await mine.search(["cats garden"], top_k=10)
    assert scores(hits) == pytest.approx(bm25("cats garden", DOCS), rel=1e-5)
    narrowed = await mine.search(["cats garden"], top_k=10, where={"missing": 1})
    assert narrowed == []


async def test_hybrid_is_the_fusion_of_the_dense_and_lexical_rankings(store: QdrantStore) -> None:
    for fusion in (
        {"method": "rrf", "k": 60},
        {"method": "weighted", "dense_weight": 0.7, "lexical_weight": 0.3},
    ):
        retrieval = {"candidates": 3, "fusion": fusion}
        collection = f"kb-{fusion['method']}"
        hybrid = knowledge_base(store, "hybrid", collection, retrieval=retrieval)
        await fill(hybrid)
        dense = knowledge_base(store, "dense", collection)
        lexical = knowledge_base(store, "lexical", collection)
        query = "warm cats in the garden"
        expected = fuse(
            await dense.search([query], top_k=3),
            await lexical.search([query], top_k=3),
            FusionSettings.model_validate(fusion),
            candidates=3,
        )
        hits = await hybrid.search([query], top_k=2)  # each side gives its 3 candidates
        assert [(h.document_id, h.score) for h in hits] == [
            (h.document_id, pytest.approx(h.score)) for h in expected[:2]
        ]


async def test_a_search_deeper_than_candidates_keeps_their_normalisation(
    store: QdrantStore,
) -> None:
    fusion = {"method": "weighted", "dense_weight": 0.7, "lexical_weight": 0.3}
    hybrid = knowledge_base(store, "hybrid", retrieval={"candidates": 2, "fusion": fusion})
    await fill(hybrid)
    query = "warm cats in the garden"  # every document holds a term of it
    dense = await knowledge_base(store, "dense").search([query], top_k=4)
    lexical = await knowledge_base(store, "lexical").search([query], top_k=4)
    assert len(dense) == len(lexical) == 4
    expected = fuse(dense, lexical, FusionSettings.model_validate(fusion), candidates=2)
    hits = await hybrid.search([query], top_k=4)  # each side gives 4 hits, 2 of them candidates
    assert [(h.document_id, h.score) for h in hits] == [
        (h.document_id, pytest.approx(h.score)) for h in expected
    ]
    assert min(h.score for h in hits) < 0  # the hits after the candidates fall below 0


async def test_equal_scores_are_ordered_by_document_id_whatever_the_store_returns(
    store: QdrantStore,
) -> None:
    kb = knowledge_base(store, "hybrid")
    names = [f"twin{i}" for i in (3, 7, 0, 9, 5, 1, 8, 2, 6, 4)]
    await fill(kb, dict.fromkeys(names, "Identical twins sleep alike."))
    hits = await kb.search(["twins sleep"], top_k=10)
    assert [h.document_id for h in hits] == sorted(names)


async def test_a_hybrid_score_threshold_applies_to_the_fused_score(store: QdrantStore) -> None:
    kb = knowledge_base(store, "hybrid")
    await fill(kb)
    everything = await kb.search(["warm cats"], top_k=10)
    cut = everything[1].score
    assert [h.document_id for h in await kb.search(["warm cats"], 10, cut)] == [
        h.document_id for h in everything if h.score >= cut
    ]


def test_rrf_and_weighted_fusion_by_hand() -> None:
    def hit(name: str, score: float) -> VectorSearchResult:
        return VectorSearchResult(score=score, document_id=name, chunk=chunk(name, name)[0])

    dense = [hit("a", 0.9), hit("b", 0.3), hit("c", 0.1)]
    lexical = [hit("c", 8.0), hit("a", 2.0)]
    rrf = fuse(dense, lexical, FusionSettings(method="rrf", k=60), candidates=3)
    assert [(h.document_id, h.score) for h in rrf] == [
        ("a", pytest.approx(1 / 61 + 1 / 62)),
        ("c", pytest.approx(1 / 63 + 1 / 61)),
        ("b", pytest.approx(1 / 62)),
    ]
    weighted = fuse(
        dense,
        lexical,
        FusionSettings(method="weighted", dense_weight=1.0, lexical_weight=0.5),
        candidates=3,
    )
    assert [(h.document_id, h.score) for h in weighted] == [
        ("a", pytest.approx(1.0)),
        ("c", pytest.approx(0.5)),
        ("b", pytest.approx(0.25)),
    ]


def test_fusion_weights_default_by_method() -> None:
    """`weighted` defaults to 0.7 dense / 0.3 lexical (docs/retrieval-evidence.md); `rrf` to
    plain RRF, 1 each, unless the file gives a weight."""
    assert FusionSettings().model_dump() == {
        "method": "weighted",
        "k": 60,
        "dense_weight": 0.7,
        "lexical_weight": 0.3,
    }
    assert RetrievalSettings.model_validate({"mode": "hybrid"}).fusion == FusionSettings()
    rrf = RetrievalSettings.model_validate({"mode": "hybrid", "fusion": {"method": "rrf"}})
    assert (rrf.fusion.dense_weight, rrf.fusion.lexical_weight) == (1.0, 1.0)
    given = FusionSettings(method="rrf", lexical_weight=0.5)
    assert (given.dense_weight, given.lexical_weight) == (1.0, 0.5)


def test_weighted_fusion_normalises_each_side_over_its_first_candidates() -> None:
    def hit(name: str, score: float) -> VectorSearchResult:
        return VectorSearchResult(score=score, document_id=name, chunk=chunk(name, name)[0])

    # Two candidates a side; each returned a third hit, as a search for more hits does.
    dense = [hit("a", 0.9), hit("b", 0.5), hit("c", 0.1)]
    lexical = [hit("b", 10.0), hit("a", 2.0), hit("c", 1.0)]
    weights = FusionSettings(method="weighted", dense_weight=0.7, lexical_weight=0.3)
    fused = fuse(dense, lexical, weights, candidates=2)
    # dense: a (0.9 - 0.5) / 0.4 = 1, b 0, c (0.1 - 0.5) / 0.4 = -1;
    # lexical: b 1, a 0, c (1 - 2) / 8 = -0.125.
    assert [(h.document_id, h.score) for h in fused] == [
        ("a", pytest.approx(0.7)),
        ("b", pytest.approx(0.3)),
        ("c", pytest.approx(-0.7 - 0.0375)),
    ]
    # The first two hits score as they do when only the candidates are fused.
    alone = fuse(dense[:2], lexical[:2], weights, candidates=2)
    assert [(h.document_id, h.score) for h in alone] == [
        (h.document_id, h.score) for h in fused[:2]
    ]


async def test_an_updated_or_deleted_document_leaves_no_lexical_trace(store: QdrantStore) -> None:
    kb = knowledge_base(store, "lexical")
    await fill(kb)
    await kb.insert_document(chunk("Goldfish now sleep in a cold lake.", "fish.txt"), "fish")
    assert [h.document_id for h in await kb.search(["pond"], top_k=5)] == []
    assert [h.document_id for h in await kb.search(["lake"], top_k=5)] == ["fish"]
    await kb.delete_document("dogs")
    assert "dogs" not in scores(await kb.search(["dogs bark"], top_k=5))
    # IDF no longer counts the deleted or replaced text either.
    left = {k: v for k, v in DOCS.items() if k != "dogs"}
    left["fish"] = "Goldfish now sleep in a cold lake."
    assert scores(await kb.search(["warm sleep"], top_k=5)) == pytest.approx(
        bm25("warm sleep", left), rel=1e-5
    )


async def test_a_dense_collection_is_refused_for_hybrid_with_what_to_do(store: QdrantStore) -> None:
    await fill(knowledge_base(store, "dense"))
    with pytest.raises(CollectionMismatchError, match=r"without a lexical side.*reset"):
        await knowledge_base(store, "hybrid").search(["cats"])


class DenseOnlyStore(QdrantStore):
    """A plugin store without a lexical side (every built-in store has one)."""

    supports_lexical = False


def test_a_store_without_a_lexical_side_is_refused_up_front() -> None:
    store = DenseOnlyStore(location=":memory:")  # never entered
    with pytest.raises(ValueError, match="retrieval mode 'hybrid' needs a lexical side"):
        knowledge_base(store, "hybrid")


async def test_dense_mode_is_unchanged(store: QdrantStore) -> None:
    kb = knowledge_base(store, "dense")
    await fill(kb)
    assert not await store.has_lexical("kb")
    hits = await kb.search(["sleeping cats"], top_k=2)
    assert hits[0].score <= 1.0


async def test_lexical_top_k_threshold_and_query_blocks(store: QdrantStore) -> None:
    kb = knowledge_base(store, "lexical")
    await fill(kb)
    everything = await kb.search(["warm cats garden"], top_k=10)
    assert len(everything) >= 3
    assert await kb.search(["warm cats garden"], top_k=1) == everything[:1]
    # Several queries: their hits merged, then cut to top_k.
    assert len(await kb.search(["warm cats", "garden dogs", "parrots"], top_k=2)) == 2
    cut = everything[1].score
    assert await kb.search(["warm cats garden"], 10, cut) == [
        h for h in everything if h.score >= cut
    ]
    # A TextBlock query is its text.
    assert await kb.search([TextBlock(text="warm cats garden")], top_k=10) == everything


async def test_a_bad_filter_is_refused_even_when_the_query_has_no_terms(
    store: QdrantStore,
) -> None:
    for mode in ("lexical", "hybrid"):
        kb = knowledge_base(store, mode, f"kb-{mode}")
        await fill(kb)
        with pytest.raises(ValueError, match="empty mapping"):
            await kb.search(["the"], top_k=3, where={"org": {}})


async def test_a_hybrid_search_stays_in_the_where_scope_on_both_sides(store: QdrantStore) -> None:
    kb = knowledge_base(store, "hybrid")
    await fill(kb, {name: text for name, text in DOCS.items() if name != "fish"}, tenant="a")
    await fill(kb, {"fish": DOCS["fish"], "more": "Warm cats sleep in the garden."}, tenant="b")
    hits = await kb.search(["warm cats in the garden"], top_k=10, where={"tenant": "a"})
    assert hits and {h.document_id for h in hits} <= {"cats", "dogs", "birds"}


async def test_a_hybrid_search_drops_image_queries_for_a_text_only_model(
    store: QdrantStore,
) -> None:
    kb = knowledge_base(store, "hybrid")
    await fill(kb)
    image = DataBlock(source=Base64Source(data="aGk=", media_type="image/png"))
    text_only = await kb.search(["warm cats"], top_k=10)
    assert text_only and await kb.search([image, "warm cats"], top_k=10) == text_only
