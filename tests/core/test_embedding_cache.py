"""FileEmbeddingCache and a model's ``embedding_cache``: AgentScope's names, per-input keys."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from ragflow_config.embedding import (
    EmbeddingCacheBase,
    FileEmbeddingCache,
    HashingEmbeddingModel,
)
from ragflow_config.message import DataBlock


class CountingModel(HashingEmbeddingModel):
    """The hashing model, recording what reaches it."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.seen: list[str | DataBlock] = []

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        self.seen.extend(batch)
        return await super().embed_batch(batch)


async def test_a_repeated_input_comes_from_the_cache(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(tmp_path / "cache")
    model = CountingModel(dimensions=16, embedding_cache=cache)

    first = await model(["cats", "dogs"])
    assert first.source == "api"
    assert model.seen == ["cats", "dogs"]

    # A new model on the same folder: "dogs" is cached, only "fish" is asked for.
    again = CountingModel(dimensions=16, embedding_cache=FileEmbeddingCache(tmp_path / "cache"))
    second = await again(["fish", "dogs"])
    assert again.seen == ["fish"]
    assert second.embeddings[1] == first.embeddings[1]
    assert second.source == "api"

    third = await again(["dogs", "cats"])
    assert third.source == "cache"
    assert third.embeddings == [first.embeddings[1], first.embeddings[0]]
    assert again.seen == ["fish"]
    assert third.usage is not None and third.usage.tokens == 0  # no call, no tokens
    assert second.usage is not None and second.usage.tokens is None  # the model reports none


async def test_other_dimensions_do_not_share_entries(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(tmp_path)
    await CountingModel(dimensions=16, embedding_cache=cache)(["cats"])
    other = CountingModel(dimensions=8, embedding_cache=cache)
    response = await other(["cats"])
    assert other.seen == ["cats"]
    assert len(response.embeddings[0]) == 8


async def test_files_are_numpy_npy_files(tmp_path: Path) -> None:
    numpy = pytest.importorskip("numpy")
    cache = FileEmbeddingCache(tmp_path)
    await cache.store([[0.25, -1.5], [3.0, 4.0]], {"input": "x"})
    path = cache.path_for({"input": "x"})
    assert numpy.load(path).tolist() == [[0.25, -1.5], [3.0, 4.0]]
    written = io.BytesIO()
    numpy.save(written, numpy.array([[0.25, -1.5], [3.0, 4.0]]))
    assert path.read_bytes() == written.getvalue()

    numpy.save(cache.path_for({"input": "y"}), numpy.array([[1.0, 2.0]], dtype="float32"))
    assert await cache.retrieve({"input": "y"}) == [[1.0, 2.0]]


async def test_store_keeps_an_entry_unless_overwrite_and_remove_and_clear(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(tmp_path)
    assert isinstance(cache, EmbeddingCacheBase)
    assert await cache.retrieve({"k": 1}) is None
    await cache.store([[1.0]], {"k": 1})
    await cache.store([[2.0]], {"k": 1})
    assert await cache.retrieve({"k": 1}) == [[1.0]]
    await cache.store([[2.0]], {"k": 1}, overwrite=True)
    assert await cache.retrieve({"k": 1}) == [[2.0]]

    await cache.remove({"k": 1})
    with pytest.raises(FileNotFoundError):
        await cache.remove({"k": 1})

    await cache.store([[1.0]], {"k": 2})
    (tmp_path / "notes.txt").write_text("kept")
    await cache.clear()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["notes.txt"]


async def test_the_file_limit_removes_the_oldest(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(tmp_path, max_file_number=2)
    for number in range(3):
        await cache.store([[float(number)]], {"k": number})
        # Distinct modification times without sleeping: set them explicitly.
        os.utime(cache.path_for({"k": number}), (1_000_000 + number, 1_000_000 + number))
    await cache.store([[3.0]], {"k": 3})
    kept = [number for number in range(4) if await cache.retrieve({"k": number})]
    assert kept == [2, 3]


async def test_an_entry_larger_than_the_size_limit_is_not_kept(tmp_path: Path) -> None:
    cache = FileEmbeddingCache(tmp_path, max_cache_size=0.001)  # about 1 KB
    await cache.store([[0.5] * 512], {"k": "big"})
    assert await cache.retrieve({"k": "big"}) is None
    await cache.store([[0.5] * 8], {"k": "small"})
    assert await cache.retrieve({"k": "small"}) == [[0.5] * 8]
