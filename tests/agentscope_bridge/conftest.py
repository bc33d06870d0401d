"""A pipeline of two tenants sharing one collection, built with their documents."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ragflow_config.message import TextBlock
from ragflow_config.pipeline import BuiltPipeline, Pipeline
from ragflow_config.rag import Chunk

PIPELINE = """\
version: 1
vector_stores:
  shared: {type: qdrant, parameters: {location: ":memory:"}}
embeddings:
  hashing: {type: hashing, parameters: {dimensions: 256}}
knowledge_bases:
  - name: handbook-a
    description: Tenant a's handbook.
    sources: [{path: docs}]
    embedding: hashing
    vector_store: shared
    collection: handbooks
    metadata_filter: {tenant_id: a}
  - name: handbook-b
    description: Tenant b's handbook.
    sources: [{path: docs}]
    embedding: hashing
    vector_store: shared
    collection: handbooks
    metadata_filter: {tenant_id: b}
middlewares:
  - type: rag
    knowledge_bases: [handbook-a]
    parameters: {mode: MODE, top_k: 2, emit_hint_event: false EXTRA}
"""

# Tenant b's text answers the question word for word; only a's may ever be found.
TEXTS = {
    "handbook-a": {
        "pto.md": "Paid time off: tenant a grants twenty five days of vacation per year.",
        "travel.md": "Travel: tenant a books trains for trips under four hours.",
        "parking.md": "Parking: tenant a has no parking spaces for visitors.",
    },
    "handbook-b": {
        "pto.md": "How many vacation days of paid time off per year? Tenant b: thirty days.",
    },
}
QUESTION = "How many vacation days of paid time off per year?"


def chunk(source: str, text: str) -> Chunk:
    return Chunk(content=TextBlock(text=text), source=source, chunk_index=0, total_chunks=1)


async def built_pipeline(
    tmp_path: Path, mode: str, extra: str = ""
) -> AsyncIterator[BuiltPipeline]:
    """The pipeline in ``mode``, ``extra`` added to its middleware's parameters."""
    (tmp_path / "docs").mkdir(exist_ok=True)
    path = tmp_path / f"{mode}.yaml"
    text = PIPELINE.replace("MODE", mode).replace(" EXTRA", extra)
    path.write_text(text, encoding="utf-8")
    async with Pipeline.load(path).build() as built:
        for name, files in TEXTS.items():
            for source, text in files.items():
                await built.knowledge_bases[name].insert_document([chunk(source, text)])
        yield built


@pytest.fixture
async def static_pipeline(tmp_path: Path) -> AsyncIterator[BuiltPipeline]:
    async for built in built_pipeline(tmp_path, "static"):
        yield built


@pytest.fixture
async def agentic_pipeline(tmp_path: Path) -> AsyncIterator[BuiltPipeline]:
    async for built in built_pipeline(tmp_path, "agentic"):
        yield built
