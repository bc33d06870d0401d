"""`embedding_cache:` on Ray: parse tasks (a ``cpu_bound`` model) and the embedding stage
fill the cache and take from it, so a run after `reset` embeds nothing."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from incremental._cached_runs import LoggedHashing, contents, logged, pipeline_file, reset
from incremental._corpus import write_corpus

from ragflow_config.pipeline import Pipeline, Registry

pytestmark = pytest.mark.usefixtures("ray_cluster")


@pytest.mark.parametrize(
    "execution",
    ["{type: ray}", "{type: ray, parameters: {embedding_cpus: 1, embedding_batch_size: 5}}"],
    ids=["parse tasks", "embedding stage"],
)
async def test_ray_tasks_fill_the_cache_and_a_run_after_reset_embeds_nothing(
    tmp_path: Path, execution: str
) -> None:
    registry = Registry.from_entry_points()
    registry.register("embedding", "logged", LoggedHashing)
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 12)
    folder = tmp_path / "pipeline"
    pipeline = Pipeline.load(pipeline_file(folder, corpus, execution=execution), registry)
    assert not (await pipeline.run()).failed
    first = await contents(pipeline)
    embedded = logged(folder / "texts.log")
    chunks = [text for stored in first["docs"].values() for text, _ in stored.values()]
    assert sorted(text for _, text in embedded) == sorted(chunks)
    assert os.getpid() not in {pid for pid, _ in embedded}  # every text embedded in Ray tasks

    await reset(pipeline)
    assert not (await pipeline.run()).failed
    assert logged(folder / "texts.log") == embedded  # every vector came from the cache
    assert await contents(pipeline) == first
