"""MilvusLiteStore specifics: the shared embedded server and file names."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from ragflow_config import VectorStoreError
from ragflow_config.rag import MilvusLiteStore

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


async def test_a_collection_name_milvus_refuses_is_reported(store_dir: Path) -> None:
    async with MilvusLiteStore(uri=str(store_dir / "kb.db")) as store:
        with pytest.raises(VectorStoreError, match="invalid collection name 'my-kb'"):
            await store.create_collection("my-kb", 2)
