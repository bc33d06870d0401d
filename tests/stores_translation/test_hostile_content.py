"""Elasticsearch and MongoDB with hostile content, at the client's transport boundary.

The contract suite's hostile-content tests need real servers, which this
machine has none of; here the requests show that content goes out exactly
as given, that a lone surrogate is refused before any request, and that a
document the engine cannot hold is an UnstorableDocumentError.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from ragflow_config import VectorStoreError
from ragflow_config._errors import UnstorableDocumentError
from ragflow_config.message import TextBlock
from ragflow_config.rag import VectorRecord

from .conftest import es_store, make_record, mongo_store
from .fake_elasticsearch import FakeElasticsearch
from .fake_mongod import FakeMongod

HOSTILE = 'nul\0 crlf\r\n quote" back\\slash ünï😀'


def hostile_record() -> VectorRecord:
    record = make_record(f"doc {HOSTILE}", 0, {"label": HOSTILE, "nested": {"label": HOSTILE}})
    chunk = record.chunk.model_copy(update={"content": TextBlock(text=HOSTILE)})
    return record.model_copy(update={"chunk": chunk})


def surrogate_record() -> VectorRecord:
    return make_record("doc", 1, {"label": "caf\udce9"})


async def test_elasticsearch_sends_hostile_text_as_it_is(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda r: (200, {"took": 1, "errors": False, "items": []})
    record = hostile_record()
    async with es_store(es_server) as store:
        await store.insert("docs", [record])
        es_server.respond = lambda r: (200, {"hits": {"hits": []}})
        await store.search("docs", [1.0, 0.0, 0.0], metadata_filter={"label": HOSTILE})

    bulk, search = es_server.requests
    [_, source] = bulk.ndjson()
    assert source["document_id"] == record.document_id
    assert source["chunk"] == record.chunk.model_dump(mode="json")
    term = json.dumps([["label"], "string", HOSTILE], ensure_ascii=False, separators=(",", ":"))
    assert term in source["metadata_terms"]
    assert search.json()["knn"]["filter"] == [{"term": {"metadata_terms": term}}]


async def test_elasticsearch_refuses_a_lone_surrogate_before_any_request(
    es_server: FakeElasticsearch,
) -> None:
    async with es_store(es_server) as store:
        with pytest.raises(UnstorableDocumentError, match="lone surrogate"):
            await store.insert("docs", [make_record("doc", 0), surrogate_record()])
    assert es_server.requests == []


async def test_elasticsearch_says_what_to_do_about_a_disk_watermark_block(
    es_server: FakeElasticsearch,
) -> None:
    blocked = {
        "_index": "docs",
        "status": 429,
        "error": {
            "type": "cluster_block_exception",
            "reason": "index [docs] blocked by: [TOO_MANY_REQUESTS/12/disk usage exceeded "
            "flood-stage watermark, index has read-only-allow-delete block];",
        },
    }
    es_server.respond = lambda r: (200, {"errors": True, "items": [{"index": blocked}]})
    async with es_store(es_server) as store:
        with pytest.raises(VectorStoreError) as failure:
            await store.insert("docs", [make_record("doc", 0)])
    assert failure.value.cause.endswith(
        "free disk space on the data nodes, and the block lifts once usage falls)"
    )


async def test_mongodb_sends_hostile_text_as_it_is(mongod: FakeMongod) -> None:
    record = hostile_record()
    async with mongo_store(mongod) as store:
        await store.insert("docs", [record])
        await store.list_documents("docs", metadata_filter={"label": HOSTILE})

    [update] = mongod.named("update")
    [aggregate] = mongod.named("aggregate")
    stored = update["updates"][0]["u"]
    assert stored["document_id"] == record.document_id
    assert stored["chunk"] == record.chunk.model_dump(mode="json")
    assert aggregate["pipeline"][0] == {
        "$match": {"$and": [{"chunk.metadata.label": {"$eq": HOSTILE}}]}
    }


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        (surrogate_record(), "lone surrogate"),
        (make_record("doc", 1, {"key\0": 1}), "must not contain"),
    ],
    ids=["surrogate", "nul-in-key"],
)
async def test_mongodb_refuses_what_bson_cannot_hold_before_sending_it(
    mongod: FakeMongod, record: VectorRecord, problem: str
) -> None:
    async with mongo_store(mongod) as store:
        with pytest.raises(UnstorableDocumentError, match=problem) as refused:
            await store.insert("docs", [record])
    assert refused.value.cause.startswith("doc.md")  # the file it came from
    assert mongod.named("update") == []


async def test_mongodb_write_errors_of_the_document_itself_are_unstorable(
    mongod: FakeMongod,
) -> None:
    # pymongo sends a replacement past 16 MiB; the server refuses it (BSONObjectTooLarge).
    def respond(name: str, command: dict[str, Any]) -> dict[str, Any] | None:
        if name != "update":
            return None
        error = {"index": 0, "code": 10334, "errmsg": "BSONObj size: 17000000 is invalid"}
        return {"n": 0, "nModified": 0, "writeErrors": [error], "ok": 1.0}

    mongod.respond = respond
    async with mongo_store(mongod) as store:
        with pytest.raises(UnstorableDocumentError, match="BSONObj size"):
            await store.insert("docs", [make_record("doc", 0)])
