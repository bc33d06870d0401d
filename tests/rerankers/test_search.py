"""``KnowledgeBase.search`` applies the knowledge base's reranker; a pipeline file names it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ragflow_config.cli import main
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.pipeline import Pipeline
from ragflow_config.pipeline._validate import check_file, display_path
from ragflow_config.rag import (
    KnowledgeBase,
    QdrantStore,
    RerankSettings,
    RetrievalSettings,
    VectorSearchResult,
)
from ragflow_config.rerankers import HttpReranker

from ._server import RerankServer, overlap
from .conftest import QUERY, TEXTS, pets, text


async def test_search_reorders_the_first_candidates_by_the_rerankers_scores(
    store: QdrantStore, tei: HttpReranker, server: RerankServer
) -> None:
    retrieved = await pets(store).search([QUERY], top_k=6)
    hits = await pets(store, tei, candidates=4).search([QUERY], top_k=5)
    head = [text(hit) for hit in retrieved[:4]]
    # The first 4 retrieved, best reranker score first (ties in retrieval order), scored
    # by the reranker; then the fifth retrieved hit with its retrieval score.
    expected_head = sorted(head, key=lambda t: -overlap(QUERY, t))
    assert expected_head != head  # the reranker changes the order
    assert [text(hit) for hit in hits] == [*expected_head, text(retrieved[4])]
    assert [hit.score for hit in hits[:4]] == [overlap(QUERY, t) for t in expected_head]
    assert hits[4].score == retrieved[4].score
    [request] = server.requests
    assert request.body == {"query": QUERY, "texts": head}


async def test_top_k_below_candidates_cuts_after_reranking(
    store: QdrantStore, tei: HttpReranker, server: RerankServer
) -> None:
    retrieved = await pets(store).search([QUERY], top_k=6)
    [best] = await pets(store, tei, candidates=6).search([QUERY], top_k=1)
    assert text(best) == max((text(hit) for hit in retrieved), key=lambda t: overlap(QUERY, t))
    assert len(server.requests[0].body["texts"]) == 6  # all candidates judged, not top_k


def test_a_reranker_goes_with_rerank_settings(store: QdrantStore) -> None:
    embedding = HashingEmbeddingModel(dimensions=64)
    with pytest.raises(ValueError, match=r"pass a reranker exactly when retrieval\.rerank is set"):
        KnowledgeBase(
            "pets",
            "",
            embedding,
            store,
            "pets",
            retrieval=RetrievalSettings(rerank=RerankSettings(reranker="tei")),
        )
    with pytest.raises(ValueError, match="pass a reranker exactly when"):
        KnowledgeBase(
            "pets", "", embedding, store, "pets", reranker=HttpReranker(base_url="http://x")
        )


PIPELINE = """\
version: 1
vector_stores:
  local: {{type: qdrant, parameters: {{path: store}}}}
embeddings:
  hashing: {{type: hashing, parameters: {{dimensions: 64}}}}
rerankers:
  tei: {{type: http, parameters: {{base_url: "{url}"}}}}
knowledge_bases:
  - name: pets
    sources: [{{path: docs}}]
    parsers: [{{type: text}}]
    chunker: {{type: approx_token}}
    embedding: hashing
    vector_store: local
    collection: pets
    retrieval:
      rerank: {{reranker: {name}, candidates: 10}}
"""


def write_project(tmp_path: Path, url: str, name: str = "tei") -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    for i, t in enumerate(TEXTS):
        (docs / f"{i}.txt").write_text(t + "\n", encoding="utf-8")
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE.format(url=url, name=name), encoding="utf-8")
    return path


def test_a_pipeline_files_reranker_is_used_by_search(tmp_path: Path, server: RerankServer) -> None:
    path = write_project(tmp_path, server.root)
    assert main(["run", str(path), "--workers", "0"]) == 0

    async def search() -> list[VectorSearchResult]:
        async with Pipeline.load(path).build() as built:
            return await built.knowledge_base("pets").search([QUERY], top_k=3)

    hits = asyncio.run(search())
    # Every chunk is a candidate (10 > 6 files): the reranker's order and scores.
    assert [text(hit).strip() for hit in hits] == [
        "cats sleep in the sun all day",
        "where do dogs sleep at night",
        "sleep sleep sleep sleep sleep",
    ]
    assert [hit.score for hit in hits] == [5.0, 3.0, 1.0]
    [request] = server.requests
    assert len(request.body["texts"]) == 6


def test_an_undefined_reranker_is_reported_at_its_line(tmp_path: Path) -> None:
    path = write_project(tmp_path, "http://127.0.0.1:9", name="tie")
    _, issues = check_file(path)
    assert [str(issue) for issue in issues] == [
        f"{display_path(path)}:17:26: knowledge_bases[0].retrieval.rerank.reranker: 'tie' is not defined in "
        "`rerankers` (defined: tei); did you mean 'tei'?"
    ]
