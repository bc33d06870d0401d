"""MilvusLiteStore specifics: the shared embedded server, its queue and file names."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from ragflow_config.rag import MilvusLiteStore
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
        upsert = store.client.upsert
        in_flight: list[None] = []
        most = 0

        async def counted(*args: Any, **kwargs: Any) -> Any:
            nonlocal most
            in_flight.append(None)
            most = max(most, len(in_flight))
            try:
                return await upsert(*args, **kwargs)
            finally:
                in_flight.pop()

        monkeypatch.setattr(store.client, "upsert", counted)
        await asyncio.gather(
            *(store.insert("kb", [make_record(f"doc-{i}", 0, [1.0, 0.0])]) for i in range(16))
        )
        assert most == 1
        assert len(await store.list_documents("kb")) == 16


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
