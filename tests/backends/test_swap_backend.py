"""The same pipeline, with only its `vector_stores` block swapped, finds the same passages.

Each backend's block is taken from its example in `pipelines/`; only where the
data lives (a temporary folder, the test server) is pointed elsewhere.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from ragflow_config.pipeline import Pipeline, RunOptions

REPO = Path(__file__).resolve().parents[2]
CORPUS = REPO / "pipelines" / "corpus" / "howto"
QUERIES = [
    "How do I sort a list of objects by one of their attributes?",
    "Configure logging to write messages to a file",
    "What does a regular expression group capture?",
    "Open a URL and read the response",
    "How are descriptors looked up on attribute access?",
]

PIPELINE = """\
version: 1
vector_stores:
  store: {store}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: 128}}}}
knowledge_bases:
  - name: howto
    sources: [{{path: {corpus}, include: ["*.rst"], allow_outside: true}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 128, overlap: 16}}}}
    embedding: model
    vector_store: store
    collection: howto_swap
"""

BACKENDS = {
    "qdrant_edge": "local.yaml",
    "qdrant": "qdrant.yaml",
    "milvus_lite": "milvus-lite.yaml",
    "pgvector": "pgvector.yaml",
    "elasticsearch": "elasticsearch.yaml",
    "mongodb": "mongodb.yaml",
}


def example_store_block(example: str) -> dict[str, Any]:
    data = YAML(typ="safe").load((REPO / "pipelines" / example).read_text(encoding="utf-8"))
    [block] = data["vector_stores"].values()
    return dict(block)


def relocated(
    backend: str,
    block: dict[str, Any],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> dict[str, Any]:
    """The example's block, with its data pointed at this test's own place."""
    parameters = dict(block.get("parameters") or {})
    if backend in ("qdrant", "qdrant_edge"):
        parameters["path"] = str(tmp_path / backend)
    elif backend == "milvus_lite":
        parameters["uri"] = str(tmp_path / "milvus.db")
    elif backend == "pgvector":
        monkeypatch.setenv(
            parameters.get("dsn_env", "PGVECTOR_DSN"), request.getfixturevalue("pgvector_dsn")
        )
    elif backend == "elasticsearch":
        url = os.environ.get("RAGFLOW_TEST_ELASTICSEARCH_URL")
        if not url:
            pytest.skip(
                "no Elasticsearch server: set RAGFLOW_TEST_ELASTICSEARCH_URL to run this case"
            )
        parameters["hosts"] = url
    elif backend == "mongodb":
        uri = os.environ.get("RAGFLOW_TEST_MONGODB_URI")
        if not uri:
            pytest.skip(
                "no MongoDB Vector Search server: set RAGFLOW_TEST_MONGODB_URI to run this case"
            )
        monkeypatch.setenv(parameters.get("uri_env", "MONGODB_URI"), uri)
        parameters["database"] = f"ragflow_test_{os.getpid()}"
    return {"type": block["type"], "parameters": parameters}


async def top_results(pipeline: Pipeline) -> list[list[tuple[str, int, float]]]:
    async with pipeline.build() as built:
        kb = built.knowledge_bases["howto"]
        try:
            results = []
            for query in QUERIES:
                hits = await kb.search([query], top_k=3)
                results.append([(h.chunk.source, h.chunk.chunk_index, h.score) for h in hits])
            return results
        finally:
            await kb.vector_store.delete_collection(kb.collection)


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[list[tuple[str, int, float]]]:
    import asyncio
    import json

    folder = tmp_path_factory.mktemp("reference")
    store = json.dumps({"type": "qdrant", "parameters": {"location": ":memory:"}})
    path = folder / "pipeline.yaml"
    path.write_text(PIPELINE.format(store=store, corpus=CORPUS), encoding="utf-8")
    pipeline = Pipeline.load(path)

    async def index_and_search() -> list[list[tuple[str, int, float]]]:
        async with pipeline.build() as built:
            from ragflow_config.pipeline._run import run

            await run(built, None, RunOptions(workers=0))
            kb = built.knowledge_bases["howto"]
            return [
                [
                    (h.chunk.source, h.chunk.chunk_index, h.score)
                    for h in await kb.search([q], top_k=3)
                ]
                for q in QUERIES
            ]

    return asyncio.run(index_and_search())


@pytest.mark.parametrize("backend", list(BACKENDS))
async def test_swapping_the_store_block_keeps_the_top_results(
    backend: str,
    reference: list[list[tuple[str, int, float]]],
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    block = relocated(
        backend, example_store_block(BACKENDS[backend]), tmp_path, request, monkeypatch
    )
    assert block["type"] == backend
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE.format(store=json.dumps(block), corpus=CORPUS), encoding="utf-8")
    pipeline = Pipeline.load(path)
    report = await pipeline.run(options=RunOptions(workers=0))
    assert report.knowledge_bases[0].count("add") == len(list(CORPUS.glob("*.rst")))

    results = await top_results(pipeline)
    assert [[(s, i) for s, i, _ in hits] for hits in results] == [
        [(s, i) for s, i, _ in hits] for hits in reference
    ]
    for hits, expected in zip(results, reference, strict=True):
        for (_, _, score), (_, _, expected_score) in zip(hits, expected, strict=True):
            assert score == pytest.approx(expected_score, abs=1e-4)  # one score scale everywhere


# Every backend has a lexical side: one retrieval block gives one ranking on each
# (Elasticsearch and MongoDB when their servers are named, as above).
LEXICAL_BACKENDS = list(BACKENDS)


async def ranked(path: Path, top_k: int = 5) -> list[list[tuple[str, int, float]]]:
    """Index the pipeline at ``path``, then each query's hits; the collection is dropped."""
    from ragflow_config.pipeline._run import run

    async with Pipeline.load(path).build() as built:  # one build: a :memory: store lives in it
        await run(built, None, RunOptions(workers=0))
        kb = built.knowledge_bases["howto"]
        try:
            return [
                [
                    (h.chunk.source, h.chunk.chunk_index, h.score)
                    for h in await kb.search([q], top_k=top_k)
                ]
                for q in QUERIES
            ]
        finally:
            await kb.vector_store.delete_collection(kb.collection)


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
@pytest.mark.parametrize("backend", LEXICAL_BACKENDS)
async def test_one_retrieval_block_gives_one_ranking_on_every_lexical_backend(
    backend: str,
    mode: str,
    tmp_path: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    retrieval = f"    retrieval: {{mode: {mode}, fusion: {{method: weighted}}}}\n"
    memory = json.dumps({"type": "qdrant", "parameters": {"location": ":memory:"}})
    reference_path = tmp_path / "reference.yaml"
    reference_path.write_text(
        PIPELINE.format(store=memory, corpus=CORPUS) + retrieval, encoding="utf-8"
    )
    block = relocated(
        backend, example_store_block(BACKENDS[backend]), tmp_path, request, monkeypatch
    )
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        PIPELINE.format(store=json.dumps(block), corpus=CORPUS) + retrieval, encoding="utf-8"
    )
    expected, results = await ranked(reference_path), await ranked(path)
    assert all(expected)
    assert [[(s, i) for s, i, _ in hits] for hits in results] == [
        [(s, i) for s, i, _ in hits] for hits in expected
    ]
    for hits, wanted in zip(results, expected, strict=True):
        for (_, _, score), (_, _, wanted_score) in zip(hits, wanted, strict=True):
            assert score == pytest.approx(wanted_score, rel=1e-5)
