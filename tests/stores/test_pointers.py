"""The pointer registry every store keeps (``read_pointer``, ``write_pointer``, ``delete_pointer``).

Run against each real store of the contract suite: a pointer is one record,
replaced whole by one write, read back exactly, and never seen half-written.
"""

from __future__ import annotations

import asyncio

import pytest

from ragflow_config.rag import VectorStoreBase
from ragflow_config.rag._stores._pointer import POINTER_REGISTRY, Generation, Pointer

from .conftest import StoreCase

ODD_NAMES = [
    "docs@3f2a9c1e",
    "docs@3f2a…",
    'say "hi"',
    "it's",
    "a/b",
    "a\\b",
    "a b?c#d%20&e=f",
    "Ärzte 文档 🙂",
    "line\nbreak\ttab",
    'id == "x" or true',
]


def pointer(tag: str, generations: int = 2, *, building: bool = True) -> Pointer:
    """A valid record whose every field says ``tag``: two records of two tags differ everywhere."""
    return Pointer(
        generations=[
            Generation(
                collection=f"kb_{tag}_g{i}",
                embedding=f"sha256:{tag}:{i}",
                fingerprint={"chunker": f"{tag}-{i}", "model": "m/é"},
            )
            for i in range(generations)
        ],
        building=Generation(collection=f"kb_{tag}_next", embedding=f"sha256:{tag}:next")
        if building
        else None,
    )


@pytest.fixture
def registry(case: StoreCase) -> StoreCase:
    """The case, its pointer registry dropped after the test on a shared server."""
    case.collections.append(POINTER_REGISTRY)
    return case


async def test_no_pointer_reads_none_and_creates_no_registry(
    registry: StoreCase, store: VectorStoreBase
) -> None:
    await store.delete_collection(POINTER_REGISTRY)  # a shared server may hold one already

    assert await store.read_pointer("kb") is None
    assert not await store.has_collection(POINTER_REGISTRY)
    await store.delete_pointer("kb")  # no pointer, no registry: a no-op that creates nothing
    assert not await store.has_collection(POINTER_REGISTRY)
    assert await store.read_pointer("kb") is None


async def test_a_written_pointer_reads_back_exactly(
    registry: StoreCase, store: VectorStoreBase
) -> None:
    written = pointer("one")
    assert len(written.generations) == 2 and written.building is not None

    await store.write_pointer("kb", written)

    assert await store.has_collection(POINTER_REGISTRY)
    found = await store.read_pointer("kb")
    assert found == written
    assert found is not None and found.live.collection == "kb_one_g0"
    assert await store.read_pointer("kb") == written  # a read changes nothing


async def test_a_second_write_replaces_the_first_whole(
    registry: StoreCase, store: VectorStoreBase
) -> None:
    await store.write_pointer("kb", pointer("first", 3))
    second = pointer("second", 1, building=False)  # fewer generations, nothing building

    await store.write_pointer("kb", second)

    assert await store.read_pointer("kb") == second
    third = pointer("third", 2)
    await store.write_pointer("kb", third)
    assert await store.read_pointer("kb") == third


async def test_pointers_of_two_names_are_independent(
    registry: StoreCase, store: VectorStoreBase
) -> None:
    names = {"kb": pointer("lower"), "KB": pointer("upper", 1), "kb2": pointer("two", 3)}
    for name, written in names.items():
        await store.write_pointer(name, written)
    for name, written in names.items():
        assert await store.read_pointer(name) == written

    await store.write_pointer("kb", pointer("lower-again"))
    assert await store.read_pointer("kb") == pointer("lower-again")
    assert await store.read_pointer("KB") == names["KB"]
    assert await store.read_pointer("kb2") == names["kb2"]
    assert await store.read_pointer("k") is None


async def test_delete_removes_one_pointer_and_not_another(
    registry: StoreCase, store: VectorStoreBase
) -> None:
    await store.write_pointer("kb-a", pointer("a"))
    await store.write_pointer("kb-b", pointer("b"))

    await store.delete_pointer("kb-a")

    assert await store.read_pointer("kb-a") is None
    assert await store.read_pointer("kb-b") == pointer("b")
    await store.delete_pointer("kb-a")  # gone already: a no-op
    await store.delete_pointer("never-written")  # the registry exists, the pointer never did
    assert await store.read_pointer("kb-b") == pointer("b")

    await store.write_pointer("kb-a", pointer("a2"))  # a deleted name can be written again
    assert await store.read_pointer("kb-a") == pointer("a2")


async def test_a_reopened_store_finds_its_pointer(registry: StoreCase) -> None:
    async with registry.open() as store:
        await store.write_pointer("kb", pointer("kept"))

    async with registry.open() as reopened:
        if not registry.persistent:  # in memory: what was closed is gone
            assert await reopened.read_pointer("kb") is None
            return
        assert await reopened.read_pointer("kb") == pointer("kept")
        await reopened.write_pointer("kb", pointer("changed"))

    async with registry.open() as again:
        assert await again.read_pointer("kb") == pointer("changed")


async def test_names_holding_odd_characters_round_trip(
    registry: StoreCase, store: VectorStoreBase
) -> None:
    records = {name: pointer(f"odd{i}", 1 + i % 3) for i, name in enumerate(ODD_NAMES)}
    for name, written in records.items():
        await store.write_pointer(name, written)

    for name, written in records.items():
        assert await store.read_pointer(name) == written, name
    # No name is read as another one its spelling resembles.
    for near in ("docs@3f2a", "a_b", "a", "ARZTE 文档 🙂", "line", 'say \\"hi\\"', "x"):
        assert await store.read_pointer(near) is None, near

    for name in ODD_NAMES[::2]:
        await store.delete_pointer(name)
    for i, name in enumerate(ODD_NAMES):
        assert await store.read_pointer(name) == (None if i % 2 == 0 else records[name]), name


@pytest.mark.parametrize("reader", ["same store", "another store"])
async def test_a_concurrent_read_sees_one_written_record_or_the_next(
    registry: StoreCase, store: VectorStoreBase, reader: str
) -> None:
    # A local Qdrant is open in one client only (its file lock, or a memory of
    # its own), so there the other reader is the same client: what serving does.
    separate = not registry.kind.startswith("qdrant")
    # Two shapes of record taking turns, each write a new one: a read that
    # mixed two, or found none mid-replacement, matches none of them.
    writes = 40
    records = [
        pointer(f"w{i}", 1, building=False) if i % 2 else pointer(f"w{i}", 4) for i in range(writes)
    ]
    await store.write_pointer("kb", records[0])
    done = asyncio.Event()
    seen: list[int] = []

    async def write() -> None:
        try:
            for record in records[1:]:
                await store.write_pointer("kb", record)
                await asyncio.sleep(0)
        finally:
            done.set()

    async def read(reading: VectorStoreBase) -> None:
        while not done.is_set():
            found = await reading.read_pointer("kb")
            assert found in records, found
            seen.append(records.index(found))
            await asyncio.sleep(0)  # a store that never suspends still lets the writer run

    if reader == "same store" or not separate:
        await asyncio.gather(write(), read(store))
    else:
        async with registry.open() as other:
            await asyncio.gather(write(), read(other))

    assert seen, "the reader never read"
    assert seen == sorted(seen), "a read went back to an older record"
    assert await store.read_pointer("kb") == records[-1]
