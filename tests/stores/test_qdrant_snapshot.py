"""A local Qdrant folder's snapshot: the answers a process asked it, kept beside it.

The next process gets the same answers without loading the folder while the
engine's files hold the same bytes, and loads it as before once they do not
(``rag/_stores/_local_snapshot.py``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from ragflow_config._errors import VectorStoreError
from ragflow_config.rag import QdrantStore
from ragflow_config.rag._stores import _local_snapshot
from ragflow_config.rag._stores._pointer import Generation, Pointer

from .conftest import make_record


async def asked(store: QdrantStore) -> dict[str, Any]:
    """What a re-run asks: the pointer, the collection, its documents under a filter."""
    pointer = await store.read_pointer("kb")
    return {
        "pointer": pointer and pointer.model_dump(),
        "exists": await store.has_collection("kb"),
        "dimensions": await store.collection_dimensions("kb"),
        "lexical": await store.has_lexical("kb"),
        "documents": sorted(
            (s.document_id, s.chunk_count, s.source, json.dumps(s.metadata, sort_keys=True))
            for s in await store.list_documents("kb", {"tenant": "a"})
        ),
    }


async def build(path: Path, **options: Any) -> None:
    """Two documents of tenant a (one of two chunks), one of tenant b, and a pointer."""
    async with QdrantStore(path=str(path), **options) as store:
        await store.create_collection("kb", 4)
        await store.insert(
            "kb",
            [
                make_record("one", 0, [1.0, 0.0, 0.0, 0.0], {"tenant": "a", "n": 1}, total=2),
                make_record("one", 1, [1.0, 1.0, 0.0, 0.0], {"tenant": "a", "n": 1}, total=2),
                make_record("two", 0, [0.0, 1.0, 0.0, 0.0], {"tenant": "a", "n": 2}),
                make_record("three", 0, [0.0, 0.0, 1.0, 0.0], {"tenant": "b"}),
            ],
        )
        live = Generation(collection="kb", embedding="hashing-4", fingerprint={"chunker": "x"})
        await store.write_pointer("kb", Pointer(generations=[live]))


async def test_the_next_process_gets_the_same_answers_without_opening_the_folder(
    store_dir: Path,
) -> None:
    await build(store_dir)
    # The writer kept its collection's listing under the scope it wrote (none here).
    async with QdrantStore(path=str(store_dir)) as store:
        listed = await store.list_documents("kb")
        assert store._client is None  # nothing was loaded
    assert sorted(s.document_id for s in listed) == ["one", "three", "two"]

    async with QdrantStore(path=str(store_dir), local_snapshot=False) as store:
        truth = await asked(store)
    assert [d[0] for d in truth["documents"]] == ["one", "two"]
    async with QdrantStore(path=str(store_dir)) as store:
        assert await asked(store) == truth
        assert store._client is not None  # tenant a's documents: a new question
    async with QdrantStore(path=str(store_dir)) as store:
        assert await asked(store) == truth
        assert len(await store.list_documents("kb")) == 3  # kept beside the new answers
        assert store._client is None

    # A question the snapshot does not hold opens the folder, and is kept for next time.
    async with QdrantStore(path=str(store_dir)) as store:
        assert [s.document_id for s in await store.list_documents("kb", {"tenant": "b"})] == [
            "three"
        ]
        assert store._client is not None
    async with QdrantStore(path=str(store_dir)) as store:
        assert await asked(store) == truth
        assert len(await store.list_documents("kb", {"tenant": "b"})) == 1
        assert store._client is None


async def test_a_write_by_any_process_is_seen_by_the_next(store_dir: Path) -> None:
    """Another process (here: a store that keeps no snapshot) writes; the files' bytes
    change, so the snapshot no longer answers."""
    await build(store_dir)
    async with QdrantStore(path=str(store_dir)) as store:
        await asked(store)
    async with QdrantStore(path=str(store_dir), local_snapshot=False) as store:
        await store.insert("kb", [make_record("four", 0, [1.0, 0.0, 1.0, 0.0], {"tenant": "a"})])
        await store.delete("kb", "two")
    async with QdrantStore(path=str(store_dir)) as store:
        documents = [d[0] for d in (await asked(store))["documents"]]
        assert store._client is not None
    assert documents == ["four", "one"]


async def test_a_process_that_writes_keeps_only_the_answers_it_asked_again(
    store_dir: Path,
) -> None:
    """Answers the writer did not ask again may be stale: they are dropped, not kept."""
    await build(store_dir)
    for _ in range(2):  # the second time from the snapshot
        async with QdrantStore(path=str(store_dir)) as store:
            await asked(store)
            assert len(await store.list_documents("kb", {"tenant": "b"})) == 1
    async with QdrantStore(path=str(store_dir)) as store:
        await asked(store)
        await store.insert("kb", [make_record("four", 0, [1.0, 0.0, 1.0, 0.0], {"tenant": "b"})])
    async with QdrantStore(path=str(store_dir)) as store:
        tenant_b = await store.list_documents("kb", {"tenant": "b"})
    assert sorted(s.document_id for s in tenant_b) == ["four", "three"]


async def test_answers_given_before_another_process_wrote_are_not_acted_on(
    store_dir: Path,
) -> None:
    """A process that answered from the snapshot, then must write, checks that the folder
    still holds what the answers describe once it holds the engine's lock."""
    await build(store_dir)
    async with QdrantStore(path=str(store_dir)) as store:
        await asked(store)

    async with QdrantStore(path=str(store_dir)) as stale:
        assert len(await stale.list_documents("kb", {"tenant": "a"})) == 2  # from the snapshot
        async with QdrantStore(path=str(store_dir), local_snapshot=False) as other:
            await other.delete("kb", "one")
        with pytest.raises(VectorStoreError, match="changed while this process was reading it"):
            await stale.insert("kb", [make_record("five", 0, [0.0, 0.0, 0.0, 1.0])])

    async with QdrantStore(path=str(store_dir), local_snapshot=False) as store:
        assert sorted(s.document_id for s in await store.list_documents("kb")) == ["three", "two"]


async def test_a_folder_another_process_has_open_is_not_answered_for(store_dir: Path) -> None:
    await build(store_dir)
    async with QdrantStore(path=str(store_dir)) as store:
        await asked(store)
    with _local_snapshot.engine_lock(store_dir) as free:
        assert free
        assert _local_snapshot.read(store_dir) is None  # it may be writing
        with pytest.raises(VectorStoreError, match="open in another process"):
            async with QdrantStore(path=str(store_dir)):
                pass
    assert _local_snapshot.read(store_dir) is not None


def test_the_digest_is_of_content_not_of_size_and_time(tmp_path: Path) -> None:
    (tmp_path / "meta.json").write_text(json.dumps({"collections": {"kb": {}}}))
    database = tmp_path / "collection" / "kb" / "storage.sqlite"
    database.parent.mkdir(parents=True)
    database.write_bytes(b"A" * 100_000)
    before = _local_snapshot.folder_digest(tmp_path)
    times = database.stat()

    with database.open("r+b") as file:  # one byte, same size, same times
        file.seek(70_000)
        file.write(b"B")
    os.utime(database, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert database.stat().st_size == times.st_size
    assert _local_snapshot.folder_digest(tmp_path) != before

    database.write_bytes(b"A" * 100_000)
    assert _local_snapshot.folder_digest(tmp_path) == before
    # Committed pages still in the write-ahead log are part of the content...
    Path(f"{database}-wal").write_bytes(b"frames")
    assert _local_snapshot.folder_digest(tmp_path) != before
    # ...an empty log, which SQLite creates on opening, is not.
    Path(f"{database}-wal").write_bytes(b"")
    assert _local_snapshot.folder_digest(tmp_path) == before


async def test_a_snapshot_of_another_format_or_a_broken_one_is_not_read(
    store_dir: Path,
) -> None:
    await build(store_dir)
    async with QdrantStore(path=str(store_dir)) as store:
        await asked(store)
    kept = store_dir / _local_snapshot.FILE_NAME
    content = json.loads(kept.read_text())
    kept.write_text(json.dumps({**content, "format": content["format"] + 1}))
    assert _local_snapshot.read(store_dir) is None
    kept.write_text(kept.read_text()[:100])
    assert _local_snapshot.read(store_dir) is None


async def test_listing_in_place_gives_what_the_engine_s_filter_gives(store_dir: Path) -> None:
    """``list_documents`` reads local mode's points in place with ``matches_filter``; the
    engine's scroll with ``_filter`` is the reference, on awkward metadata and deletions."""
    metadata = [
        {"tenant": "a", "n": 4},
        {"tenant": "a", "n": 4.0},
        {"tenant": "a", "n": True},
        {"tenant": "a", "n": "4"},
        {"tenant": ["a", "b"], "n": [3, 4]},
        {"tenant": "a", "org": {"team": "x", "size": 2**60 + 1}},
        {"tenant": "a", "org": {"team": "x", "size": 2**60}},
        {"tenant": "a", "org.team": "x"},
        {"tenant": "A"},
        {},
    ]
    filters: list[dict[str, Any] | None] = [
        None,
        {"tenant": "a"},
        {"n": 4},
        {"n": 4.0},
        {"n": True},
        {"n": "4"},
        {"tenant": "b", "n": 3},
        {"org": {"team": "x"}},
        {"org": {"size": 2**60}},
        {"org.team": "x"},
    ]
    async with QdrantStore(path=str(store_dir), local_snapshot=False) as store:
        await store.create_collection("kb", 4)
        records = [
            make_record(f"doc{i}", chunk, [1.0, float(i), float(chunk), 0.0], meta, total=2)
            for i, meta in enumerate(metadata)
            for chunk in range(2)
        ]
        await store.insert("kb", records)
        await store.delete("kb", "doc3")
        await store.insert("kb", [make_record("doc0", 0, [1.0, 0.0, 0.0, 0.0], {"tenant": "z"})])

        in_place = {repr(f): await store.list_documents("kb", f) for f in filters}
        assert store._local_payloads("kb") is not None  # the in-place path was taken
        store._local_payloads = lambda collection: None  # type: ignore[method-assign]
        by_engine = {repr(f): await store.list_documents("kb", f) for f in filters}

    def comparable(summaries: list[Any]) -> list[tuple[Any, ...]]:
        return sorted((s.document_id, s.chunk_count, repr(s.metadata)) for s in summaries)

    for key in in_place:
        assert comparable(in_place[key]) == comparable(by_engine[key]), key
    assert comparable(in_place["{'n': 4}"])  # the comparison is not of empty lists
