"""``explain`` on every store: the same ranking with and without it, and the same explanation.

One collection per backend is indexed with a lexical side, then searched by
a dense, a lexical and a hybrid handle on it, each with and without
``explain``; the explanations (ranks, matched terms) must also match those of
an in-memory Qdrant, so no store's explain depends on how it returns ties.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragflow_config.pipeline import Pipeline, RunOptions
from ragflow_config.pipeline._run import run
from ragflow_config.rag import KnowledgeBase, RetrievalSettings

from .test_swap_backend import (
    BACKENDS,
    CORPUS,
    PIPELINE,
    QUERIES,
    example_store_block,
    relocated,
)

MODES = ["dense", "lexical", "hybrid"]
Ranking = list[tuple[str, int, float]]


def explained(hit: Any) -> tuple[Any, ...]:
    """What an explain says, scores left out (each store keeps float32 to its own rounding)."""
    explain = hit.explain
    lexical = explain.lexical
    return (
        hit.chunk.source,
        hit.chunk.chunk_index,
        explain.query,
        explain.dense.rank if explain.dense else None,
        (lexical.rank, [m.term for m in lexical.terms]) if lexical else None,
    )


async def searched(path: Path) -> dict[str, tuple[list[Ranking], list[list[Any]]]]:
    """Per mode: each query's ranking without explain, and its explanations."""
    async with Pipeline.load(path).build() as built:
        await run(built, None, RunOptions(workers=0))
        built_kb = built.knowledge_bases["howto"]
        try:
            results = {}
            for mode in MODES:
                kb = KnowledgeBase(
                    "howto",
                    "",
                    built_kb.embedding_model,
                    built_kb.vector_store,
                    built_kb.collection,
                    retrieval=RetrievalSettings(mode=mode),
                )
                rankings, explanations = [], []
                for query in QUERIES:
                    plain = await kb.search([query], top_k=5)
                    hits = await kb.search([query], top_k=5, explain=True)
                    assert [h.model_dump(exclude={"explain"}) for h in hits] == [
                        h.model_dump() for h in plain
                    ]
                    rankings.append([(h.chunk.source, h.chunk.chunk_index, h.score) for h in plain])
                    explanations.append([explained(h) for h in hits])
                results[mode] = rankings, explanations
            return results
        finally:
            await built_kb.vector_store.delete_collection(built_kb.collection)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    import asyncio

    path = tmp_path_factory.mktemp("reference") / "pipeline.yaml"
    memory = json.dumps({"type": "qdrant", "parameters": {"location": ":memory:"}})
    path.write_text(
        PIPELINE.format(store=memory, corpus=CORPUS) + "    retrieval: {mode: hybrid}\n",
        encoding="utf-8",
    )
    return asyncio.run(searched(path))


@pytest.mark.parametrize("backend", list(BACKENDS))
async def test_explain_keeps_every_modes_ranking_and_explains_alike_on_every_store(
    backend: str,
    reference: dict[str, Any],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    block = relocated(
        backend, example_store_block(BACKENDS[backend]), tmp_path, request, monkeypatch
    )
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        PIPELINE.format(store=json.dumps(block), corpus=CORPUS) + "    retrieval: {mode: hybrid}\n",
        encoding="utf-8",
    )
    results = await searched(path)
    for mode in MODES:
        rankings, explanations = results[mode]
        expected_rankings, expected_explanations = reference[mode]
        assert all(rankings)
        assert [[(s, i) for s, i, _ in hits] for hits in rankings] == [
            [(s, i) for s, i, _ in hits] for hits in expected_rankings
        ], mode
        assert explanations == expected_explanations, mode
    hybrid = results["hybrid"][1]
    assert any(lexical and lexical[1] for hits in hybrid for *_, lexical in hits)  # terms matched
