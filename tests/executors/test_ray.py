"""The Ray executor on a real local cluster: the same collection as the local executor, and faults.

Each test indexes a corpus twice, with the local executor into one store and
with Ray into another, and compares what the two stores hold: document ids,
chunk texts, payloads and vectors.
"""

from __future__ import annotations

import asyncio
import os
import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from incremental._corpus import write_corpus

from executors._models import CountingMiniLM
from executors._parsers import HangingTextParser, WorkerKillingTextParser
from ragflow_config._errors import ParserError
from ragflow_config.cli import main
from ragflow_config.executors.base import time_limit_reason
from ragflow_config.executors.ray import RayExecutor, RayTasks
from ragflow_config.pipeline import Pipeline, Registry, RunOptions, RunReport
from ragflow_config.rag import ApproxTokenChunker, TextParser

REPO = Path(__file__).resolve().parents[2]
HOWTO = REPO / "pipelines" / "corpus" / "howto"  # tests/backends's corpus

pytestmark = pytest.mark.usefixtures("ray_cluster")


@pytest.fixture
def registry() -> Registry:
    registry = Registry.from_entry_points()
    registry.register("parser", "hanging_text", HangingTextParser)
    registry.register("parser", "worker_killing_text", WorkerKillingTextParser)
    registry.register("embedding", "counting_minilm", CountingMiniLM)
    return registry


def write_pipeline(
    folder: Path,
    corpus: Path,
    *,
    execution: str = "{type: local}",
    parser: str = "text",
    include: str = '["**/*"]',
    model: str = "{type: hashing, parameters: {dimensions: 64}}",
) -> Path:
    path = folder / "pipeline.yaml"
    folder.mkdir(parents=True, exist_ok=True)
    path.write_text(
        textwrap.dedent(f"""\
        version: 1
        vector_stores:
          store: {{type: qdrant, parameters: {{path: store}}}}
        embeddings:
          model: {model}
        knowledge_bases:
          - name: docs
            sources: [{{path: {corpus}, include: {include}, allow_outside: true}}]
            parsers: [{{type: {parser}}}]
            chunker: {{type: approx_token, parameters: {{chunk_size: 64, overlap: 8}}}}
            embedding: model
            vector_store: store
            collection: docs
            prune: true
            max_delete_fraction: 1
        execution: {execution}
        """),
        encoding="utf-8",
    )
    return path


async def contents(pipeline: Pipeline) -> dict[str, tuple[dict[str, Any], list[float]]]:
    """Every point the store holds: by id, its payload and its vector."""
    async with pipeline.build() as built:
        client = built.knowledge_bases["docs"].vector_store.client
        points, _ = await client.scroll("docs", limit=100_000, with_vectors=True)
    return {str(point.id): (point.payload, point.vector) for point in points}


def timeless(value: Any) -> Any:
    """``value`` without what a write makes afresh: a text block's random id and its time."""
    if isinstance(value, dict):
        return {
            key: timeless(item) for key, item in value.items() if key not in ("id", "created_at")
        }
    return value


def assert_same(local: dict[str, Any], ray: dict[str, Any]) -> None:
    assert local and sorted(ray) == sorted(local)
    for point_id, (payload, vector) in local.items():
        assert timeless(ray[point_id][0]) == timeless(payload)
        assert ray[point_id][1] == pytest.approx(vector, abs=1e-6)


def counts(report: RunReport) -> dict[str, int]:
    [kb] = report.knowledge_bases
    return {action: count for action, count in kb.as_dict()["counts"].items() if count}


@pytest.mark.parametrize("corpus", ["generated", "howto"])
async def test_ray_fills_the_collection_the_local_executor_fills(
    tmp_path: Path, corpus: str, registry: Registry
) -> None:
    if corpus == "generated":
        source = tmp_path / "corpus"
        write_corpus(source, 24)
    else:
        source = HOWTO
    local = Pipeline.load(write_pipeline(tmp_path / "local", source), registry)
    on_ray = Pipeline.load(
        write_pipeline(tmp_path / "ray", source, execution="{type: ray}"), registry
    )
    local_report = await local.run(options=RunOptions(workers=1))
    ray_report = await on_ray.run()
    assert counts(ray_report) == counts(local_report) and not ray_report.failed
    assert_same(await contents(local), await contents(on_ray))

    again = await on_ray.run()
    assert not again.pending and set(counts(again)) == {"unchanged"}


async def test_the_embedding_stage_embeds_in_ray_tasks_what_the_driver_would(
    tmp_path: Path, registry: Registry
) -> None:
    source = tmp_path / "corpus"
    write_corpus(source, 4)
    # Not cpu_bound: without the stage, the driver embeds it, a file's texts in one batch.
    local = Pipeline.load(
        write_pipeline(tmp_path / "local", source, model="{type: counting_minilm}"), registry
    )
    log = tmp_path / "batches.log"
    model = f"{{type: counting_minilm, parameters: {{batch_log: '{log}'}}}}"
    execution = "{type: ray, parameters: {embedding_cpus: 1, embedding_batch_size: 3}}"
    on_ray = Pipeline.load(
        write_pipeline(tmp_path / "ray", source, execution=execution, model=model), registry
    )
    await local.run(options=RunOptions(workers=1))
    assert CountingMiniLM.batches_in_this_process > 0
    CountingMiniLM.batches_in_this_process = 0
    ray_report = await on_ray.run()
    assert not ray_report.failed and CountingMiniLM.batches_in_this_process == 0
    on_local, on_cluster = await contents(local), await contents(on_ray)
    assert_same(on_local, on_cluster)
    lines = [line.split() for line in log.read_text(encoding="utf-8").splitlines()]
    batches = [(pid, int(size)) for pid, size in lines if size != "load"]
    # Batches of embedding_batch_size texts, in Ray workers, covering every chunk once.
    assert max(size for _, size in batches) == 3
    assert sum(size for _, size in batches) == len(on_cluster)
    assert str(os.getpid()) not in {pid for pid, _ in batches}
    # Each worker loads the model once, however many of the batches it embeds.
    loads = Counter(pid for pid, what in lines if what == "load")
    assert len(batches) > len(loads) and set(loads.values()) == {1}
    assert set(loads) == {pid for pid, _ in batches}


def test_shards_on_ray_then_prune_equal_one_full_local_run(tmp_path: Path) -> None:
    source = tmp_path / "corpus"
    write_corpus(source, 24)
    local = write_pipeline(tmp_path / "local", source)
    sharded = write_pipeline(tmp_path / "ray", source)  # run with `--executor ray`
    assert main(["run", str(local), "--workers", "0"]) == 0
    # A file indexed before, since deleted: only the prune after the shards removes it.
    (source / "gone.md").write_text("# Gone\n\nA file that was deleted since.\n", encoding="utf-8")
    assert main(["run", str(sharded), "--executor", "ray"]) == 0
    (source / "gone.md").unlink()

    for shard in ("1/2", "2/2"):
        assert main(["run", str(sharded), "--executor", "ray", "--shard", shard]) == 0
    assert main(["run", str(sharded), "--prune-only"]) == 0
    assert_same(
        asyncio.run(contents(Pipeline.load(local))), asyncio.run(contents(Pipeline.load(sharded)))
    )


async def test_a_hanging_file_fails_alone_at_its_time_limit(
    tmp_path: Path, registry: Registry
) -> None:
    source = tmp_path / "corpus"
    write_corpus(source, 8)
    (source / "hang.txt").write_text("a parser never returns from this one", encoding="utf-8")
    local = Pipeline.load(
        write_pipeline(tmp_path / "local", source, parser="hanging_text", include='["**/*.md"]'),
        registry,
    )
    execution = "{type: ray, parameters: {parse_timeout_seconds: 10}}"
    on_ray = Pipeline.load(
        write_pipeline(tmp_path / "ray", source, execution=execution, parser="hanging_text"),
        registry,
    )
    await local.run(options=RunOptions(workers=0))
    report = await on_ray.run()

    [kb] = report.knowledge_bases
    failed = [(change.path, change.reason) for change in kb.changes if change.failed]
    assert failed == [("hang.txt", time_limit_reason(10))]
    assert counts(report) == {"add": 8, "failed": 1}
    assert_same(await contents(local), await contents(on_ray))


async def test_a_killed_worker_s_file_runs_again_elsewhere(
    tmp_path: Path, registry: Registry
) -> None:
    source = tmp_path / "corpus"
    write_corpus(source, 8)
    marker = tmp_path / "killed"
    (source / "victim.md").write_text(f"# Victim\n\nIts worker dies.\n\n{marker}\n")
    local, on_ray = (
        Pipeline.load(
            write_pipeline(
                tmp_path / name, source, execution=execution, parser="worker_killing_text"
            ),
            registry,
        )
        for name, execution in (("local", "{type: local}"), ("ray", "{type: ray}"))
    )
    report = await on_ray.run()
    assert marker.exists(), "the parser never killed its worker"
    await local.run(options=RunOptions(workers=0))  # after the kill: it parses victim.md

    [kb] = report.knowledge_bases
    assert [(change.path, change.reason) for change in kb.changes if change.failed] == []
    assert counts(report) == {"add": 9}
    assert_same(await contents(local), await contents(on_ray))


async def test_a_hanging_file_that_shared_a_task_fails_alone() -> None:
    # One slot (the test cluster has 2 CPUs): the first file goes alone, and the
    # three sent while it runs share the next task, the hanging one among them.
    tasks = RayTasks(
        RayExecutor.Parameters(parse_cpus=2, files_per_task=8, parse_timeout_seconds=4)
    )
    parser, chunker = HangingTextParser(), ApproxTokenChunker(chunk_size=64, overlap=8)
    names = ["first.md", "hang.txt", "second.md", "third.md"]
    try:
        outcomes = await asyncio.gather(
            *(
                tasks.prepare(parser, chunker, None, f"The text of {name}.".encode(), name)
                for name in names
            ),
            return_exceptions=True,
        )
    finally:
        tasks.shutdown()
    hang = outcomes.pop(1)
    assert isinstance(hang, ParserError) and hang.cause == time_limit_reason(4)
    expected = [
        await chunker.chunk(await TextParser().parse(f"The text of {name}.".encode(), name))
        for name in ("first.md", "second.md", "third.md")
    ]
    assert [[chunk.content.text for chunk in chunks] for chunks, _ in outcomes] == [  # type: ignore[misc]
        [chunk.content.text for chunk in chunks] for chunks in expected
    ]
