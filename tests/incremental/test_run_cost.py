"""A run says what it cost (issue 40, point 6): per knowledge base, the chunks the model
embedded, those whose vectors were reused from the store, and the embedding cache's hits
and misses. Checked against the texts the model itself logged, from whichever process
embedded them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragflow_config.cli import main
from ragflow_config.pipeline import Pipeline, Registry, RunOptions

from ._cached_runs import LoggedHashing, logged, pipeline_file, reset
from ._corpus import write_corpus


@pytest.fixture
def registry() -> Registry:
    registry = Registry.from_entry_points()
    registry.register("embedding", "logged", LoggedHashing)
    return registry


def longest(corpus: Path) -> Path:
    return max(sorted(corpus.rglob("*.md")), key=lambda path: path.stat().st_size)


async def test_an_edit_re_run_counts_the_vectors_it_reused(
    tmp_path: Path, registry: Registry
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 12)
    folder = tmp_path / "run"
    pipeline = Pipeline.load(pipeline_file(folder, corpus, cache=False), registry)
    log = folder / "texts.log"

    [full] = (await pipeline.run(options=RunOptions(workers=0))).knowledge_bases
    assert full.vectors.as_dict() == {
        "embedded": full.chunks,
        "reused": 0,
        "cache_hits": 0,
        "cache_misses": 0,
    }
    assert full.chunks == len(logged(log)) > 12

    edited = longest(corpus)
    edited.write_text(edited.read_text(encoding="utf-8") + "\nA closing line.\n", encoding="utf-8")
    before = len(logged(log))
    [edit] = (await pipeline.run(options=RunOptions(workers=0))).knowledge_bases
    embedded_now = len(logged(log)) - before
    assert edit.count("update") == 1
    assert edit.vectors.embedded == embedded_now >= 1
    assert edit.vectors.reused == edit.chunks - embedded_now >= 1  # the unchanged chunks

    [unchanged] = (await pipeline.run(options=RunOptions(workers=0))).knowledge_bases
    assert unchanged.chunks == 0 and unchanged.vectors.as_dict() == {
        "embedded": 0,
        "reused": 0,
        "cache_hits": 0,
        "cache_misses": 0,
    }


async def test_cache_hits_and_misses_are_counted_in_the_parser_processes_too(
    tmp_path: Path, registry: Registry
) -> None:
    """The hashing model is cpu_bound: it embeds in the parser processes, beside the
    parsing, and its cache lookups there reach the report."""
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 12)
    folder = tmp_path / "run"
    pipeline = Pipeline.load(pipeline_file(folder, corpus), registry)
    log = folder / "texts.log"
    options = RunOptions(workers=1)

    [first] = (await pipeline.run(options=options)).knowledge_bases
    texts = logged(log)
    assert first.vectors.embedded == first.vectors.cache_misses == len(texts)
    assert first.vectors.cache_hits == first.chunks - len(texts)  # repeated texts, if any
    assert first.vectors.reused == 0

    await reset(pipeline)
    [again] = (await pipeline.run(options=options)).knowledge_bases
    assert len(logged(log)) == len(texts)  # nothing embedded
    assert again.vectors.as_dict() == {
        "embedded": 0,
        "reused": 0,
        "cache_hits": again.chunks,
        "cache_misses": 0,
    }
    assert again.chunks == first.chunks


def test_run_json_and_the_summary_line_say_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 6)
    folder = tmp_path / "run"
    folder.mkdir()
    path = folder / "pipeline.yaml"
    path.write_text(
        "version: 1\n"
        "vector_stores:\n  store: {type: qdrant, parameters: {path: store}}\n"
        "embeddings:\n  model: {type: hashing, parameters: {dimensions: 64}}\n"
        "knowledge_bases:\n"
        f"  - name: docs\n    sources: [{{path: {corpus}, allow_outside: true}}]\n"
        "    chunker: {type: approx_token, parameters: {chunk_size: 64, overlap: 8}}\n"
        "    embedding: model\n    vector_store: store\n    collection: docs\n",
        encoding="utf-8",
    )
    assert main(["run", str(path), "--workers", "0", "-q"]) == 0
    first = capsys.readouterr().out
    written = next(line for line in first.splitlines() if "chunks written" in line)
    total = int(written.rsplit("; ", 1)[1].split()[0])
    assert f"docs: vectors: {total} embedded, 0 reused from the store" in first.splitlines()

    edited = longest(corpus)
    edited.write_text(edited.read_text(encoding="utf-8") + "\nA closing line.\n", encoding="utf-8")
    assert main(["run", str(path), "--workers", "0", "--json"]) == 0
    [kb] = json.loads(capsys.readouterr().out)["knowledge_bases"]
    vectors = kb["vectors"]
    assert vectors["reused"] >= 1 and vectors["embedded"] >= 1
    assert vectors["embedded"] + vectors["reused"] == kb["chunks_written"]
    assert vectors["cache_hits"] == vectors["cache_misses"] == 0
