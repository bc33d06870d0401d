"""MilvusLiteStore specifics: the shared embedded server, its queue and file names."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ragflow_config.rag import MilvusLiteStore
from ragflow_config.rag._stores._lite_clock import LiteClock
from ragflow_config.rag._stores.milvus import _lite as lite_servers
from ragflow_config.rag._stores.milvus import milvus_name

from .conftest import make_record

pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (extra: milvus)")


async def test_two_stores_on_one_file_share_its_server(store_dir: Path) -> None:
    uri = str(store_dir / "shared.db")
    async with MilvusLiteStore(uri=uri) as first:
        await first.create_collection("kb", 2)
        async with MilvusLiteStore(uri=uri) as second:
            await second.insert("kb", [make_record("doc", 0, [1.0, 0.0])])
        # Leaving the second store must not stop the server the first still uses.
        assert [r.document_id for r in await first.search("kb", [1.0, 0.0])] == ["doc"]

    async with MilvusLiteStore(uri=uri) as third:
        assert await third.collection_dimensions("kb") == 2


async def test_milvus_lite_gets_one_request_at_a_time(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Milvus Lite serves one request at a time; requests sent together wait in
    # its server, where each one's timeout counts the wait behind the others
    # (a run with 64 files in flight timed out at 21,000 chunks). The store
    # queues them itself, so a timeout covers one request's own work.
    async with MilvusLiteStore(uri=str(store_dir / "kb.db")) as store:
        await store.create_collection("kb", 2)
        in_flight: list[None] = []
        most = 0

        def counted(request: Any) -> Any:
            async def send(*args: Any, **kwargs: Any) -> Any:
                nonlocal most
                in_flight.append(None)
                most = max(most, len(in_flight))
                try:
                    return await request(*args, **kwargs)
                finally:
                    in_flight.pop()

            return send

        # A write is a key lookup, then an insert (new ids) or an upsert (stored ones).
        for name in ("query", "insert", "upsert"):
            monkeypatch.setattr(store.client, name, counted(getattr(store.client, name)))
        await asyncio.gather(
            *(store.insert("kb", [make_record(f"doc-{i}", 0, [1.0, 0.0])]) for i in range(16))
        )
        assert most == 1
        assert len(await store.list_documents("kb")) == 16


async def test_lite_inserts_new_ids_and_upserts_stored_ones_without_duplicates(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Milvus Lite's upsert costs more per row as the collection grows (issue 40
    # item 5, bench/milvus_insert.py): rows whose ids are not stored go by insert.
    # An insert of a stored id would add a second row, so the stored ones go by upsert.
    async with MilvusLiteStore(uri=str(store_dir / "kb.db"), batch_size=3) as store:
        await store.create_collection("kb", 2)
        sent: dict[str, int] = {"insert": 0, "upsert": 0}

        def counted(name: str) -> Any:
            request = getattr(store.client, name)

            async def send(collection: str, rows: list[Any], **kwargs: Any) -> Any:
                sent[name] += len(rows)
                return await request(collection, rows, **kwargs)

            return send

        for name in sent:
            monkeypatch.setattr(store.client, name, counted(name))

        async def rows() -> int:
            # Through the store's own request path, which waits until the last insert's rows
            # are in the server's past (LiteClock: read at once, a count found 0 of 2 in a
            # fresh-clone CI run), and at Strong consistency, as the store's reads are.
            [count] = await store._call(
                lambda client: client.query(
                    "kb", filter="", output_fields=["count(*)"], consistency_level="Strong"
                )
            )
            return int(count["count(*)"])

        await store.insert("kb", [make_record("doc", i, [1.0, float(i)]) for i in range(4)])
        assert sent == {"insert": 4, "upsert": 0}
        # Chunks 0-3 again (new text) and a new chunk 4, across batches of 3.
        again = [make_record("doc", i, [float(i), 1.0], {"v": 2}) for i in range(5)]
        await store.insert("kb", again)
        assert sent == {"insert": 5, "upsert": 4}
        assert await rows() == 5
        chunks = await store.list_chunks("kb", "doc")
        assert [(c.chunk_index, c.metadata) for c in chunks] == [(i, {"v": 2}) for i in range(5)]
        # Deleted, the document's ids are new again: written by insert, once each.
        await store.delete("kb", "doc")
        await store.insert("kb", again[:2])
        assert sent == {"insert": 7, "upsert": 4}
        assert await rows() == 2


class FrozenClock:
    """A wall clock stopped at one instant, and the waits asked of it."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def now(self) -> float:
        return 1_000_000.0

    async def sleep(self, seconds: float) -> None:
        self.waits.append(round(seconds, 6))
        await asyncio.sleep(seconds)  # the real server still needs the wait


async def test_a_lite_insert_is_waited_out_before_the_next_request(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Milvus Lite stamps inserted rows slightly in the future (LiteClock): a read
    # sent within that millisecond found an upserted document gone (CI, once).
    uri = store_dir / "kb.db"
    frozen = FrozenClock()
    clock = LiteClock(now=frozen.now, sleep=frozen.sleep)
    monkeypatch.setitem(lite_servers._lite_clocks, str(uri.resolve()), clock)
    async with MilvusLiteStore(uri=str(uri), batch_size=2) as store:
        await store.create_collection("kb", 2)
        assert frozen.waits == []  # nothing inserted yet: nothing to wait for
        await store.insert("kb", [make_record("doc", i, [1.0, float(i)]) for i in range(3)])
        assert frozen.waits == [0.001]  # the second batch waited for the first
        assert clock.rows_inserted == 3
        summaries = await store.list_documents("kb")
        assert [(s.document_id, s.chunk_count) for s in summaries] == [("doc", 3)]
        assert frozen.waits[1] == 0.001  # the read waited for the second batch


def test_the_wait_grows_a_millisecond_per_2_to_the_18_rows_inserted() -> None:
    now = [5.0]
    waits: list[float] = []

    async def record(seconds: float) -> None:
        waits.append(round(seconds, 6))

    clock = LiteClock(now=lambda: now[0], sleep=record)
    asyncio.run(clock.settle())
    clock.inserted(10)
    asyncio.run(clock.settle())
    clock.inserted(3 * 2**18)  # the server's row counter now spills 3 ms
    asyncio.run(clock.settle())
    now[0] += 0.0035  # time passed: only the rest is waited
    asyncio.run(clock.settle())
    now[0] += 0.001
    asyncio.run(clock.settle())
    assert waits == [0.001, 0.004, 0.0005]


async def test_a_relative_uri_is_created_where_it_points(
    store_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(store_dir)
    async with MilvusLiteStore(uri="./nested/dir/kb.db") as store:
        await store.create_collection("kb", 2)
    assert (store_dir / "nested" / "dir" / "kb.db").exists()


@pytest.mark.parametrize(
    ("uri", "problem"),
    [("./kb.sqlite", "must end in .db"), (f"./{'k' * 40}.db", "at most 36"), ("./a b.db", "36")],
)
def test_lite_file_names_milvus_lite_cannot_open_are_refused(uri: str, problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        MilvusLiteStore(uri=uri)


# Names AgentScope users write that Milvus refuses, and valid names that look like their spelling.
AWKWARD_NAMES = ["kb-1", "kb_1", "_m_kb_2d_1", "_m_kb_1", "2024 reports", "Ärzte", "kb.1", ""]


async def test_collection_names_milvus_refuses_are_spelled_apart(store_dir: Path) -> None:
    async with MilvusLiteStore(uri=str(store_dir / "kb.db")) as store:
        for index, name in enumerate(AWKWARD_NAMES):
            await store.create_collection(name, 2)
            await store.insert(name, [make_record(f"doc-{index}", 0, [1.0, 0.0])])
        for index, name in enumerate(AWKWARD_NAMES):
            assert await store.has_collection(name)
            assert await store.collection_dimensions(name) == 2
            assert [s.document_id for s in await store.list_documents(name)] == [f"doc-{index}"]
        await store.delete_collection("kb-1")
        assert not await store.has_collection("kb-1")
        assert await store.has_collection("kb_1")

    # The spelling is deterministic: a new store finds the same collections.
    async with MilvusLiteStore(uri=str(store_dir / "kb.db")) as store:
        hits = await store.search("Ärzte", [1.0, 0.0])
        assert [hit.document_id for hit in hits] == [f"doc-{AWKWARD_NAMES.index('Ärzte')}"]


def test_collection_name_spelling_is_injective_and_valid() -> None:
    long_names = ["-" * 300, "-" * 301, "x" * 300]
    spelled = [milvus_name(name) for name in [*AWKWARD_NAMES, *long_names]]
    assert len(set(spelled)) == len(spelled)
    assert all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,254}", name) for name in spelled)
    assert milvus_name("kb_1") == "kb_1"  # valid names stay as they were
    assert milvus_name("kb-1") == "_m_kb_2d_1"
