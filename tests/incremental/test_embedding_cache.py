"""`embedding_cache:` in a pipeline: a text embedded once, by any knowledge base or run, is not
embedded again, and a vector from another model, dimension or chunking never comes back."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from _killing import install_plugin, run_killed

from ragflow_config.embedding import FileEmbeddingCache, HashingEmbeddingModel
from ragflow_config.executors.local import ParserProcesses
from ragflow_config.pipeline import Pipeline, Registry, RunOptions
from ragflow_config.rag import ApproxTokenChunker, TextParser

from ._cached_runs import Contents, LoggedHashing, contents, logged, pipeline_file, reset, texts
from ._corpus import write_corpus, write_pipeline
from .test_crash_safety import PLUGIN

IN_PROCESS = RunOptions(workers=0)


@pytest.fixture
def registry() -> Registry:
    registry = Registry.from_entry_points()
    registry.register("embedding", "logged", LoggedHashing)
    return registry


async def from_scratch(
    folder: Path, corpus: Path, registry: Registry, **kwargs: object
) -> Contents:
    """What a run without a cache stores, in a store of its own."""
    pipeline = Pipeline.load(pipeline_file(folder, corpus, cache=False, **kwargs), registry)  # type: ignore[arg-type]
    await pipeline.run(options=IN_PROCESS)
    return await contents(pipeline)


async def test_a_second_knowledge_base_and_a_run_after_reset_embed_nothing_the_cache_holds(
    tmp_path: Path, registry: Registry
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 30)
    folder = tmp_path / "cached"
    pipeline = Pipeline.load(
        pipeline_file(folder, corpus, knowledge_bases=("docs", "copy")), registry
    )
    await pipeline.run(options=IN_PROCESS)
    first = await contents(pipeline)
    embedded = [text for _, text in logged(folder / "texts.log")]
    # Each distinct text once: the second knowledge base took every vector from the cache.
    assert sorted(embedded) == sorted(texts(first["docs"])) and texts(first["copy"]) == set(
        embedded
    )

    entries = len(list((tmp_path / "cache").glob("*.npy")))
    async with pipeline.build() as built:  # the cache serves runs: searches write nothing
        await built.knowledge_bases["docs"].search(["a query never indexed"], top_k=3)
    assert len(list((tmp_path / "cache").glob("*.npy"))) == entries == len(embedded)

    await reset(pipeline)
    assert await contents(pipeline) == {"docs": {}, "copy": {}}
    report = await pipeline.run(options=IN_PROCESS)
    assert [kb.count("add") for kb in report.knowledge_bases] == [30, 30]
    # Nothing embedded again (the one text more is the query's).
    assert len(logged(folder / "texts.log")) == len(embedded) + 1
    again = await contents(pipeline)
    # Vectors from the cache are the model's own, bit for bit.
    expected = await from_scratch(
        tmp_path / "plain", corpus, registry, knowledge_bases=("docs", "copy")
    )
    assert again == first == expected


@pytest.mark.parametrize(
    ("changed", "model", "chunk_size"),
    [
        ("dimensions", "{dimensions: 32}", 64),
        ("model name", "{dimensions: 64, name: hashing-v2}", 64),
        ("chunker", "{dimensions: 64}", 48),
    ],
)
async def test_another_model_dimension_or_chunking_gets_no_stale_vector(
    tmp_path: Path, registry: Registry, changed: str, model: str, chunk_size: int
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 30)
    first = Pipeline.load(pipeline_file(tmp_path / "first", corpus), registry)
    await first.run(options=IN_PROCESS)
    before = texts((await contents(first))["docs"])

    folder = tmp_path / "changed"
    changed_pipeline = Pipeline.load(
        pipeline_file(folder, corpus, model=model, chunk_size=chunk_size), registry
    )
    await changed_pipeline.run(options=IN_PROCESS)
    after = await contents(changed_pipeline)
    embedded = {text for _, text in logged(folder / "texts.log")}
    if changed == "chunker":
        # The same model: a text cut alike before is a correct hit; only new texts are embedded.
        assert embedded == texts(after["docs"]) - before and texts(after["docs"]) & before
    else:
        assert embedded == texts(after["docs"])  # every text, though the cache holds them all
    scratch = await from_scratch(
        tmp_path / "plain", corpus, registry, model=model, chunk_size=chunk_size
    )
    assert after == scratch


async def test_a_damaged_entry_is_embedded_again_not_served(
    tmp_path: Path, registry: Registry
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 12)
    folder = tmp_path / "cached"
    pipeline = Pipeline.load(pipeline_file(folder, corpus), registry)
    await pipeline.run(options=IN_PROCESS)
    entries = sorted((tmp_path / "cache").glob("*.npy"))
    assert len(entries) == len(logged(folder / "texts.log"))
    damaged = entries[::2]
    for entry in damaged:  # one bit of the vector's last value
        content = bytearray(entry.read_bytes())
        content[-17] ^= 0x80
        entry.write_bytes(bytes(content))

    await reset(pipeline)
    await pipeline.run(options=IN_PROCESS)
    assert len(logged(folder / "texts.log")) == len(entries) + len(damaged)
    assert await contents(pipeline) == await from_scratch(tmp_path / "plain", corpus, registry)


async def test_a_cache_the_disk_refuses_costs_its_hits_not_the_run(
    tmp_path: Path, registry: Registry
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 6)
    (tmp_path / "cache").write_text("a file where the cache's folder should be")
    pipeline = Pipeline.load(pipeline_file(tmp_path / "cached", corpus), registry)
    report = (await pipeline.run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.count("add") == 6 and not report.failures
    assert await contents(pipeline) == await from_scratch(tmp_path / "plain", corpus, registry)


async def test_a_cpu_bound_model_in_parser_processes_fills_and_reads_the_cache(
    tmp_path: Path,
) -> None:
    write_corpus(tmp_path / "corpus", 8)
    files = [(path.name, path.read_bytes()) for path in sorted((tmp_path / "corpus").rglob("*.md"))]
    parser, chunker = TextParser(), ApproxTokenChunker(chunk_size=64, overlap=8)
    log = tmp_path / "texts.log"
    cache = FileEmbeddingCache(tmp_path / "cache")
    rounds = []
    for _ in range(2):  # fresh processes each time, as two runs have
        model = LoggedHashing(dimensions=64, text_log=log, embedding_cache=cache)
        processes = ParserProcesses(1, [])
        try:
            # The first file is prepared here while the process starts; the rest go to it.
            await processes.prepare(parser, chunker, model, b"warm up", "warm.txt", backlog=None)
            assert processes._started is not None and await processes._started
            rounds.append(
                await asyncio.gather(
                    *(processes.prepare(parser, chunker, model, data, name) for name, data in files)
                )
            )
        finally:
            processes.shutdown()
    first, second = rounds
    embedded = [(pid, text) for pid, text in logged(log) if text != "warm up"]
    chunk_texts = [chunk.content.text for chunks, _ in first for chunk in chunks]  # type: ignore[union-attr]
    assert sorted(text for _, text in embedded) == sorted(chunk_texts)
    assert os.getpid() not in {pid for pid, _ in embedded}  # all in the parser process
    assert len(logged(log)) == len(chunk_texts) + 1  # the second round embedded nothing
    plain = HashingEmbeddingModel(dimensions=64)
    assert (
        [made.embeddings for _, made in second if made is not None]
        == [made.embeddings for _, made in first if made is not None]
        == [(await plain([chunk.content for chunk in chunks])).embeddings for chunks, _ in first]
    )


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_plugin(
        tmp_path_factory.mktemp("plugin"),
        "killing_store_for_cache",
        PLUGIN,
        {"killing_qdrant": "KillingQdrantStore"},
    )


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", [3, 11, 26])
async def test_a_killed_run_with_the_cache_converges_as_one_without(
    tmp_path: Path, plugin_path: Path, kill_at: int
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 24)
    cache = f"embedding_cache: {{path: {tmp_path / 'cache'}}}\n"
    store = tmp_path / "store"
    killing = write_pipeline(
        tmp_path / "killing.yaml",
        store_path=store,
        corpus=corpus,
        store_type="killing_qdrant",
        extra_store_parameters="batch_size: 2",
    )
    killing.write_text(killing.read_text(encoding="utf-8") + cache, encoding="utf-8")
    run_killed(killing, plugin_path, RAGFLOW_TEST_KILL_AT=str(kill_at))
    assert list((tmp_path / "cache").glob("*.npy"))  # the killed run left entries

    plain = write_pipeline(tmp_path / "plain.yaml", store_path=store, corpus=corpus)
    plain.write_text(plain.read_text(encoding="utf-8") + cache, encoding="utf-8")
    pipeline = Pipeline.load(plain)
    report = (await pipeline.run(options=IN_PROCESS)).knowledge_bases[0]
    assert not report.failures
    reference = write_pipeline(
        tmp_path / "reference.yaml", store_path=tmp_path / "reference", corpus=corpus
    )
    without_cache = Pipeline.load(reference)
    await without_cache.run(options=IN_PROCESS)
    assert await contents(pipeline) == await contents(without_cache)
    assert not (await pipeline.run(options=RunOptions(workers=0, dry_run=True))).pending


async def test_each_knowledge_base_s_own_model_goes_through_the_cache(
    tmp_path: Path, registry: Registry
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 10)
    folder = tmp_path / "cached"
    file = pipeline_file(folder, corpus, knowledge_bases=("docs", "named"))
    # The second knowledge base embeds with a model of its own (by name, so its own entries).
    head, _, tail = file.read_text(encoding="utf-8").rpartition("embedding: model")
    other = f"  other: {{type: logged, parameters: {{dimensions: 64, name: hashing-v2, text_log: {folder / 'texts.log'}}}}}\n"
    head = head.replace("embedding_cache:", other + "embedding_cache:", 1)
    file.write_text(head + "embedding: other" + tail, encoding="utf-8")
    pipeline = Pipeline.load(file, registry)
    await pipeline.run(options=IN_PROCESS)
    embedded = len(logged(folder / "texts.log"))

    await reset(pipeline)
    report = await pipeline.run(options=IN_PROCESS)
    assert [kb.count("add") for kb in report.knowledge_bases] == [10, 10]
    assert len(logged(folder / "texts.log")) == embedded  # both models' vectors were cached
