"""Qdrant's local mode on a real disk: how its SQLite file is journaled."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from ragflow_config.rag import QdrantStore
from ragflow_config.rag._stores.qdrant import _local as qdrant_local

from .conftest import make_record


def journal_mode(path: Path, collection: str) -> str:
    (database,) = path.glob(f"collection/{collection}/*.sqlite")
    with sqlite3.connect(database) as connection:
        return str(connection.execute("PRAGMA journal_mode").fetchone()[0])


async def write_and_count(path: Path, **options: object) -> dict[str, int]:
    """Write three more chunks of one document, reopen the store, and count per document."""
    async with QdrantStore(path=str(path), **options) as store:
        await store.create_collection("kb", 4)
        start = sum(s.chunk_count for s in await store.list_documents("kb"))
        records = [make_record("doc", start + i, [1.0, float(i), 0.0, 1.0]) for i in range(3)]
        await store.insert("kb", records)
    async with QdrantStore(path=str(path), **options) as store:
        return {s.document_id: s.chunk_count for s in await store.list_documents("kb")}


async def test_a_local_store_writes_ahead_by_default_and_keeps_what_it_wrote(
    tmp_path: Path,
) -> None:
    assert await write_and_count(tmp_path) == {"doc": 3}
    assert journal_mode(tmp_path, "kb") == "wal"


async def test_turning_the_log_off_returns_an_existing_file_to_a_rollback_journal(
    tmp_path: Path,
) -> None:
    await write_and_count(tmp_path)
    assert await write_and_count(tmp_path, local_write_ahead_log=False) == {"doc": 6}
    assert journal_mode(tmp_path, "kb") == "delete"
    # And back: a collection that exists before the store opens is switched too.
    assert await write_and_count(tmp_path) == {"doc": 9}
    assert journal_mode(tmp_path, "kb") == "wal"


async def test_opening_a_folder_says_how_many_points_it_loaded_and_what_avoids_it(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Local mode reads every point of every collection on opening, for a search
    (issue 40): the log says how many and how long, and above a threshold, warns with the
    stores that read only what a query needs."""
    await write_and_count(tmp_path)  # 3 points in "kb"
    async with QdrantStore(path=str(tmp_path)) as store:
        await store.create_collection("other", 4)
        await store.insert(
            "other", [make_record("d", i, [1.0, 0.0, 0.0, float(i)]) for i in range(2)]
        )
    with caplog.at_level(logging.INFO, logger="ragflow_config.stores"):
        async with QdrantStore(path=str(tmp_path)) as store:
            await store.search("kb", [1.0, 0.0, 0.0, 1.0])  # not in the folder's snapshot
    [loaded] = [r.getMessage() for r in caplog.records if "loaded" in r.getMessage()]
    assert loaded.startswith(f"QdrantStore({tmp_path}): loaded 5 points of 2 collection(s) in ")
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]

    caplog.clear()
    monkeypatch.setattr(qdrant_local, "_SLOW_LOCAL_OPEN_SECONDS", 0.0)  # every open is "slow"
    async with QdrantStore(path=str(tmp_path)) as store:
        await store.search("kb", [1.0, 0.0, 0.0, 1.0])
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "read all 5 points of its 2 collection(s) into memory" in warning
    assert (
        "Qdrant Edge (`qdrant_edge`), a Qdrant server (`url`), pgvector or Milvus Lite read only "
        "what a query needs" in warning
    )


async def test_a_collection_past_the_local_engines_size_is_told_to_move_once(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(qdrant_local, "_MOVE_PAST_POINTS", 3)  # 20,000 in earnest
    monkeypatch.setattr(qdrant_local, "_told_to_move", set())
    async with QdrantStore(path=str(tmp_path), local_snapshot=False) as store:
        await store.create_collection("big", 4)
        await store.insert(
            "big", [make_record("d", i, [1.0, 0.0, 0.0, float(i)]) for i in range(4)]
        )
        await store.create_collection("small", 4)
        await store.insert("small", [make_record("d", 0, [1.0, 0.0, 0.0, 0.0])])

    def told() -> list[str]:
        return [
            r.getMessage() for r in caplog.records if "Move it to Qdrant Edge" in r.getMessage()
        ]

    with caplog.at_level(logging.WARNING, logger="ragflow_config.stores"):
        async with QdrantStore(path=str(tmp_path), local_snapshot=False):
            pass
        [warning] = told()  # the big collection alone
        assert f"QdrantStore({tmp_path}): collection big holds 4 points, past the 3 " in warning
        assert "`ragflow-config copy FILE KB --from OLD_STORE`" in warning
        async with QdrantStore(path=str(tmp_path), local_snapshot=False):
            pass
        assert len(told()) == 1  # once a process


async def test_a_costly_local_search_leaves_the_event_loop_free(tmp_path: Path) -> None:
    """The local engine checks a filter against every point in the caller (issue 53: a
    900-level filter froze the server for 5 s). Its calls run on their own thread: a
    heartbeat on the event loop beats while one runs; on the loop, it could not."""
    import asyncio

    deep: dict[str, object] = {"tenant_id": "t"}
    for _ in range(400):
        deep = {"a": deep}
    async with QdrantStore(path=str(tmp_path)) as store:
        await store.create_collection("kb", 4)
        records = [make_record(f"doc{i}", 0, [1.0, float(i), 0.0, 1.0]) for i in range(200)]
        await store.insert("kb", records)
        beats = 0
        searching = True

        async def heartbeat() -> None:
            nonlocal beats
            while searching:
                await asyncio.sleep(0)
                beats += 1

        beating = asyncio.create_task(heartbeat())
        await asyncio.sleep(0)
        before = beats
        try:
            await store.search("kb", [1.0, 0.0, 0.0, 1.0], 5, {"k" * 100_000: "x", **deep})
        finally:
            searching = False
            await beating
        assert beats - before > 10  # the loop ran while the engine searched


def test_a_forked_child_reaches_its_own_local_store(tmp_path: Path) -> None:
    """A process forked after a store call (mutmut's runner, a test harness) gets an
    engine thread of its own: it inherits the executor but not its thread, and its
    first store call used to wait forever. The fork happens in a fresh interpreter, so
    what this test process has loaded (gRPC, Ray) has no say in the child."""
    script = f"""
import asyncio, os, signal, sys
from pathlib import Path
sys.path.insert(0, {str(Path(__file__).parent.parent.parent)!r})
from tests.stores.test_qdrant_local import write_and_count

asyncio.run(write_and_count(Path({str(tmp_path)!r}) / "parent"))  # the engine thread runs
pid = os.fork()
if pid == 0:  # the child: exit 0 only if its store answered
    signal.alarm(20)
    try:
        counts = asyncio.run(write_and_count(Path({str(tmp_path)!r}) / "child"))
        os._exit(0 if counts == {{"doc": 3}} else 1)
    except BaseException:
        os._exit(2)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""
    finished = subprocess.run([sys.executable, "-c", script], timeout=120, check=False)
    assert finished.returncode == 0
