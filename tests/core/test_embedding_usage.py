"""A call's ``usage.time``, as AgentScope reports it: the longest of its batches' own
times (what each batch's ``_call_api`` reported), none for vectors from the cache."""

from __future__ import annotations

from pathlib import Path

from ragflow_config.embedding import (
    EmbeddingResponse,
    EmbeddingUsage,
    FileEmbeddingCache,
    HashingEmbeddingModel,
)
from ragflow_config.message import DataBlock


class TimedModel(HashingEmbeddingModel):
    """Reports that a batch took one second per input (no clock involved)."""

    async def _call_api(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        vectors = await self.embed_batch(inputs)
        return EmbeddingResponse(vectors, usage=EmbeddingUsage(time=float(len(inputs)), tokens=1))


async def test_the_time_is_the_longest_batch_s_own() -> None:
    model = TimedModel(dimensions=16, batch_size=2)
    assert (await model(["a"])).usage == EmbeddingUsage(time=1.0, tokens=1)
    # Batches of 2 and 1 inputs, run side by side: the call took as long as the longer one.
    assert (await model(["a", "b", "c"])).usage == EmbeddingUsage(time=2.0, tokens=2)


async def test_vectors_from_the_cache_take_no_time(tmp_path: Path) -> None:
    model = TimedModel(dimensions=16, embedding_cache=FileEmbeddingCache(tmp_path))
    await model(["a", "b"])
    cached = await model(["a", "b"])
    assert (cached.source, cached.usage) == ("cache", EmbeddingUsage(time=0, tokens=0))
    partly = await model(["a", "new"])
    assert partly.usage == EmbeddingUsage(time=1.0, tokens=1)  # one batch, of "new" alone
