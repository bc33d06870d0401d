"""FileEmbeddingCache and a model's ``embedding_cache``: AgentScope's names, per-input keys."""

from __future__ import annotations

import concurrent.futures
import io
import multiprocessing
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


async def test_files_are_numpy_npy_files_with_a_checksum(tmp_path: Path) -> None:
    numpy = pytest.importorskip("numpy")
    cache = FileEmbeddingCache(tmp_path)
    await cache.store([[0.25, -1.5], [3.0, 4.0]], {"input": "x"})
    path = cache.path_for({"input": "x"})
    assert numpy.load(path).tolist() == [[0.25, -1.5], [3.0, 4.0]]
    written = io.BytesIO()
    numpy.save(written, numpy.array([[0.25, -1.5], [3.0, 4.0]]))
    content = path.read_bytes()
    assert content[:-16] == written.getvalue() and len(content) == len(written.getvalue()) + 16

    umask = os.umask(0o022)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask  # readable by whom the umask allows

    # A file without the checksum (numpy's own, AgentScope's) vouches for nothing: a miss.
    numpy.save(cache.path_for({"input": "y"}), numpy.array([[1.0, 2.0]]))
    assert await cache.retrieve({"input": "y"}) is None


def damaged(content: bytes, other_entry: bytes) -> dict[str, bytes]:
    """An entry's file as a crash, a disk or a person can leave it."""
    data_start = len(content) - 16 - 8 * 16  # 16 float64 values, then the checksum
    flipped = bytearray(content)
    flipped[data_start + 3] ^= 0x01  # one bit of the first value
    header = bytearray(content)
    header[content.index(b"(1, 16)") + 4] = ord("8")  # shape (1, 8): a shorter vector
    return {
        "empty": b"",
        "truncated": content[: len(content) // 2],
        "zeroed tail": content[:data_start] + bytes(len(content) - data_start),
        "a flipped bit": bytes(flipped),
        "another shape": bytes(header),
        "without its checksum": content[:-16],
        "another entry's file": other_entry,
    }


@pytest.mark.parametrize(
    "damage",
    [
        "empty",
        "truncated",
        "zeroed tail",
        "a flipped bit",
        "another shape",
        "without its checksum",
        "another entry's file",
    ],
)
async def test_a_damaged_entry_is_a_miss_and_is_replaced(tmp_path: Path, damage: str) -> None:
    cache = FileEmbeddingCache(tmp_path)
    model = CountingModel(dimensions=16, embedding_cache=cache)
    [cats, dogs] = (await model(["cats", "dogs"])).embeddings
    path = cache.path_for(model.cache_identifier("cats"))
    other = cache.path_for(model.cache_identifier("dogs")).read_bytes()
    path.write_bytes(damaged(path.read_bytes(), other)[damage])

    again = CountingModel(dimensions=16, embedding_cache=cache)
    assert (await again(["cats", "dogs"])).embeddings == [cats, dogs]
    assert again.seen == ["cats"]  # the damaged entry missed; the sound one hit
    # Embedded again, its entry is whole once more.
    assert await cache.retrieve(model.cache_identifier("cats")) == [cats]


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


async def test_a_hit_renews_an_entry_so_the_least_recently_used_goes_first(
    tmp_path: Path,
) -> None:
    cache = FileEmbeddingCache(tmp_path, max_file_number=3)
    for number in range(3):
        await cache.store([[float(number)]], {"k": number})
        os.utime(cache.path_for({"k": number}), (1_000_000 + number, 1_000_000 + number))
    assert await cache.retrieve({"k": 0}) == [[0.0]]  # the oldest write, used last
    await cache.store([[3.0]], {"k": 3})
    kept = [number for number in range(4) if await cache.retrieve({"k": number})]
    assert kept == [0, 2, 3]


async def test_a_limited_cache_stays_within_its_limits_and_evicts_only_its_entries(
    tmp_path: Path,
) -> None:
    (tmp_path / "mine.npy").write_bytes(b"not an entry")
    (tmp_path / "notes.txt").write_text("kept")
    abandoned = tmp_path / ".0123456789abcdef-x.npy.tmp"  # a killed writer's
    abandoned.write_bytes(b"half")
    os.utime(abandoned, (1_000_000, 1_000_000))
    entry_bytes = 128 + 8 * 8 + 16  # header, 8 float64 values, checksum
    limit = 40 * entry_bytes
    cache = FileEmbeddingCache(tmp_path, max_file_number=32, max_cache_size=limit / 2**20)
    model = HashingEmbeddingModel(dimensions=8, embedding_cache=cache)
    for number in range(200):
        await model([f"text {number}"])
        entries = [path for path in tmp_path.glob("*.npy") if len(path.stem) == 64]
        assert len(entries) <= 32
        assert sum(path.stat().st_size for path in entries) <= limit
    assert sorted(path.name for path in tmp_path.iterdir() if len(path.stem) != 64) == [
        "mine.npy",
        "notes.txt",
    ]
    # The entries kept are the latest ones, each whole.
    for number in (199, 198):
        [vector] = (await HashingEmbeddingModel(dimensions=8)([f"text {number}"])).embeddings
        assert await cache.retrieve(model.cache_identifier(f"text {number}")) == [vector]


def _store_and_read(folder: str, rounds: int) -> list[str]:
    """In another process: store and read the same entries as its siblings; what went wrong."""
    import asyncio

    async def main() -> list[str]:
        cache = FileEmbeddingCache(folder, max_file_number=40)
        problems = []
        for round_ in range(rounds):
            for number in range(50):
                vector = [float(number)] * 32
                await cache.store([vector], {"k": number}, overwrite=round_ % 2 == 1)
                found = await cache.retrieve({"k": (number * 7) % 50})
                if found is not None and found != [[float((number * 7) % 50)] * 32]:
                    problems.append(f"entry {(number * 7) % 50} read as {found[0][:2]}...")
        return problems

    return asyncio.run(main())


def test_processes_sharing_a_folder_never_read_a_wrong_or_half_vector(tmp_path: Path) -> None:
    with concurrent.futures.ProcessPoolExecutor(
        4, mp_context=multiprocessing.get_context("spawn")
    ) as pool:
        outcomes = list(pool.map(_store_and_read, [str(tmp_path)] * 4, [6] * 4))
    assert outcomes == [[]] * 4
    assert not list(tmp_path.glob("*.tmp"))  # every temporary file was renamed or removed
    assert len(list(tmp_path.glob("*.npy"))) <= 40 + 3 * 40 // 16  # P - 1 sixteenths over


def test_the_key_holds_the_settings_that_shape_vectors_only() -> None:
    from ragflow_config.embedding import MiniLMEmbeddingModel

    key = MiniLMEmbeddingModel().cache_identifier("cats")
    assert MiniLMEmbeddingModel(threads=1, batch_size=7).cache_identifier("cats") == key
    assert MiniLMEmbeddingModel(max_length=64).cache_identifier("cats") != key
    assert HashingEmbeddingModel(dimensions=64).cache_identifier("cats") != (
        HashingEmbeddingModel(dimensions=32).cache_identifier("cats")
    )
