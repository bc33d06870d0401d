"""A run that wrote nothing leaves nothing behind (issue 52, trap 3): no empty collection,
and no empty collection kept as the "previous" one a rollback would switch to.

Through a real Qdrant store on disk; the model is the hashing model, or one that fails
the way a hosted model without its key does.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragflow_config.embedding import EmbeddingInput, HashingEmbeddingModel
from ragflow_config.pipeline import Registry, RunOptions

from .test_rebuild_beside import project

IN_PROCESS = RunOptions(workers=0)


class KeylessModel(HashingEmbeddingModel):
    """A model whose every call fails, as a hosted one without its API key does."""

    async def embed_batch(self, inputs: list[EmbeddingInput]) -> Any:
        raise RuntimeError("401 Unauthorized: no API key")


@pytest.fixture
def registry() -> Registry:
    registry = Registry.from_entry_points()
    registry.register("embedding", "counting_hashing", HashingEmbeddingModel)
    return registry


async def collections(pipeline: Any) -> list[str]:
    async with pipeline.build() as built:
        store = built.knowledge_bases["docs"].vector_store
        return [name for name in ("docs",) if await store.has_collection(name)]


async def test_a_first_run_whose_model_fails_creates_no_collection(
    tmp_path: Path, registry: Registry
) -> None:
    keyless = Registry.from_entry_points()
    keyless.register("embedding", "counting_hashing", KeylessModel)
    failing = project(tmp_path, keyless, dimensions=48)
    with pytest.raises(RuntimeError, match="no API key"):
        await failing.run(options=IN_PROCESS)
    assert await collections(failing) == []

    # The next plan sees a first run: no rebuild of an empty collection, one count.
    fixed = project(tmp_path, registry, dimensions=64)
    [plan] = (await fixed.run(options=RunOptions(workers=0, dry_run=True))).knowledge_bases
    assert plan.rebuild is None and plan.count("add") == 12
    [report] = (await fixed.run(options=IN_PROCESS)).knowledge_bases
    assert report.rebuild is None and report.chunks == plan.chunks_to_embed


async def test_an_empty_live_collection_is_not_kept_as_the_previous_one(
    tmp_path: Path, registry: Registry
) -> None:
    # A collection an older version left empty (its first run failed after creating it).
    empty = project(tmp_path, registry, dimensions=48)
    async with empty.build() as built:
        await built.knowledge_bases["docs"].vector_store.create_collection("docs", 48)
    fixed = project(tmp_path, registry, dimensions=64)
    [report] = (await fixed.run(options=IN_PROCESS)).knowledge_bases
    assert report.rebuild is not None and report.rebuild.switched
    assert report.rebuild.retired == ["docs"]
    async with fixed.build() as built:
        kb = built.knowledge_bases["docs"]
        pointer = await kb.read_pointer()
        assert pointer is not None
        assert [g.collection for g in pointer.generations] == [report.rebuild.target]
        assert not await kb.vector_store.has_collection("docs")
