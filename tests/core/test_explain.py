"""``search(..., explain=True)``: each hit says what each side, the fusion and the filter made of it.

On a real in-memory Qdrant with the hashing model. The expected ranks come
from searching each side on its own (a dense and a lexical knowledge base on
the same collection), the expected term weights from the textbook BM25
formula, so nothing here is read back from the code under test.
"""

from __future__ import annotations

import inspect
import math
from collections import Counter
from collections.abc import AsyncIterator

import pytest

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import TextBlock
from ragflow_config.rag import Chunk, KnowledgeBase, QdrantStore, RetrievalSettings
from ragflow_config.rag._explain import ExplainedHit

DOCS = {
    "cats": "Cats sleep on warm windows, and sleeping cats purr.",
    "dogs": "Dogs chase the cats of the garden; the garden dogs bark at cats.",
    "fish": "Goldfish swim slowly in a warm pond.",
    "birds": "Parrots whistle tunes and learn many words every morning in the garden.",
    "rocks": "Granite and basalt are igneous.",
}
SCOPE = {"tenant": "a"}


def handle(store: QdrantStore, mode: str, **retrieval: object) -> KnowledgeBase:
    return KnowledgeBase(
        "kb",
        "",
        HashingEmbeddingModel(dimensions=64),
        store,
        "kb",
        SCOPE,
        retrieval=RetrievalSettings.model_validate({"mode": mode, **retrieval}),
    )


@pytest.fixture
async def store() -> AsyncIterator[QdrantStore]:
    async with QdrantStore(location=":memory:") as opened:
        kb = handle(opened, "hybrid")
        for name, text in DOCS.items():
            block = TextBlock(text=text)
            chunk = Chunk(content=block, source=f"{name}.txt", chunk_index=0, total_chunks=1)
            await kb.insert_document([chunk], document_id=name)
        yield opened


def bm25(term: str, text_terms: list[str], holding: int, total: int) -> tuple[float, float]:
    """(query weight, document weight) of ``term`` by the textbook formula, default settings."""
    tf, k1, b, avg = Counter(text_terms)[term], 1.2, 0.75, 100.0
    document = tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(text_terms) / avg))
    return math.log(1 + (total - holding + 0.5) / (holding + 0.5)), document


def test_explain_is_keyword_only_and_off_by_default() -> None:
    parameter = inspect.signature(KnowledgeBase.search).parameters["explain"]
    assert parameter.kind is inspect.Parameter.KEYWORD_ONLY
    assert parameter.default is False


async def test_a_hybrid_hit_names_both_sides_ranks_and_its_matched_terms(
    store: QdrantStore,
) -> None:
    query = "where do sleeping cats purr"
    rrf = {"method": "rrf"}  # its score is checked below from the two ranks
    hits = await handle(store, "hybrid", fusion=rrf).search([query], top_k=5, explain=True)
    dense = await handle(store, "dense").search([query], top_k=5)
    lexical = await handle(store, "lexical").search([query], top_k=5)
    dense_rank = {h.document_id: rank for rank, h in enumerate(dense, 1)}
    lexical_rank = {h.document_id: (rank, h.score) for rank, h in enumerate(lexical, 1)}
    assert {h.document_id for h in hits} == set(DOCS)
    analyzer_terms = {
        "cats": ["cat", "sleep", "warm", "window", "sleep", "cat", "purr"],
        "dogs": ["dog", "chase", "cat", "garden", "garden", "dog", "bark", "cat"],
    }
    for hit in hits:
        assert isinstance(hit, ExplainedHit)
        explain = hit.explain
        assert explain.mode == "hybrid" and explain.query == query
        assert explain.fusion is not None and explain.fusion.method == "rrf"
        assert explain.fusion.score == explain.retrieval_score == hit.score
        assert explain.dense is not None and explain.dense.rank == dense_rank[hit.document_id]
        assert explain.lexical is not None
        if hit.document_id in lexical_rank:
            rank, score = lexical_rank[hit.document_id]
            assert (explain.lexical.rank, explain.lexical.score) == (rank, score)
        else:  # no term in common: not on the lexical side at all
            assert (explain.lexical.rank, explain.lexical.score, explain.lexical.terms) == (
                None,
                0,
                [],
            )
        # RRF from the two ranks, as the settings say (k=60, both weights 1).
        parts = [r for r in (explain.dense.rank, explain.lexical.rank) if r is not None]
        assert hit.score == pytest.approx(sum(1 / (60 + r) for r in parts))
        assert explain.rerank is None and explain.metadata_filter == SCOPE
    by_id = {hit.document_id: hit.explain for hit in hits}
    # "where", "do" are stop words; "sleeping" -> "sleep", "cats" -> "cat"; 2 of 5 hold "cat".
    for document, terms in analyzer_terms.items():
        lexical_side = by_id[document].lexical
        assert lexical_side is not None
        matched = {m.term: m for m in lexical_side.terms}
        assert set(matched) == {"cat", "sleep", "purr"} & set(terms)
        holding = {"cat": 2, "sleep": 1, "purr": 1}
        for term, match in matched.items():
            query_weight, document_weight = bm25(term, terms, holding[term], len(DOCS))
            assert match.query_weight == pytest.approx(query_weight)
            assert match.document_weight == pytest.approx(document_weight)
            assert match.contribution == pytest.approx(query_weight * document_weight)
        assert lexical_side.score == pytest.approx(sum(m.contribution for m in matched.values()))
    cats = by_id["cats"].lexical
    assert cats is not None and cats.terms[0].term == "sleep"  # largest first


async def test_each_mode_explains_only_its_own_sides(store: QdrantStore) -> None:
    [dense] = await handle(store, "dense").search(["warm pond"], top_k=1, explain=True)
    assert dense.explain.dense is not None and dense.explain.dense.rank == 1
    assert dense.explain.dense.score == dense.score
    assert dense.explain.lexical is None and dense.explain.fusion is None
    [lexical] = await handle(store, "lexical").search(["warm pond"], top_k=1, explain=True)
    assert lexical.document_id == "fish"
    assert lexical.explain.dense is None and lexical.explain.fusion is None
    assert lexical.explain.lexical is not None
    assert lexical.explain.lexical.score == lexical.score
    assert [m.term for m in lexical.explain.lexical.terms] == ["pond", "warm"]


async def test_the_filter_in_force_is_the_scope_with_the_searchs_where(
    store: QdrantStore,
) -> None:
    hits = await handle(store, "hybrid").search(
        ["cats"], top_k=2, where={"tenant": "b", "kind": "x"}, explain=True
    )
    assert hits == []  # the scope wins over where: tenant a and b cannot both hold
    [hit] = await handle(store, "dense").search(
        ["cats"], top_k=1, where={"tenant": "a"}, explain=True
    )
    assert hit.explain.metadata_filter == SCOPE


async def test_several_queries_name_the_one_that_gave_the_best_score(store: QdrantStore) -> None:
    hits = await handle(store, "lexical").search(["granite basalt", "cats"], top_k=5, explain=True)
    by_id = {hit.document_id: hit.explain for hit in hits}
    assert by_id["rocks"].query == "granite basalt"
    assert by_id["cats"].query == "cats"


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
async def test_explain_keeps_the_ranking(store: QdrantStore, mode: str) -> None:
    kb = handle(store, mode, fusion={"method": "weighted"}, candidates=3)
    for queries in (["sleeping cats in the garden"], ["warm", "garden dogs"]):
        plain = await kb.search(queries, top_k=4)
        explained = await kb.search(queries, top_k=4, explain=True)
        assert [(h.document_id, h.score) for h in explained] == [
            (h.document_id, h.score) for h in plain
        ]
        assert [h.model_dump(exclude={"explain"}) for h in explained] == [
            h.model_dump() for h in plain
        ]


def test_the_words_a_page_highlights_are_the_terms_the_analyzer_counts() -> None:
    from ragflow_config.rag._analyzer import Analyzer

    analyzer = Analyzer()
    text = "The cats\u2019 Sleeping habits: cats SLEEP, don't they? Naïve café owners sleep."
    spans = analyzer.spans(text)
    assert [term for _, _, term in spans] == analyzer.terms(text)
    assert [text[start:end] for start, end, term in spans if term == "sleep"] == [
        "Sleeping",
        "SLEEP",
        "sleep",
    ]
