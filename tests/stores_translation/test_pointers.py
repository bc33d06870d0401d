"""The pointer registry of Elasticsearch and MongoDB at the wire: what each store sends.

No server runs here (the contract suite runs them when one is named): the
requests are asserted against the fake servers, and a round trip runs
against their small stateful stand-ins (``Documents``, ``Collections``).
"""

from __future__ import annotations

import json
from urllib.parse import quote

import pytest

from ragflow_config import VectorStoreError
from ragflow_config.rag._stores._pointer import POINTER_REGISTRY, Generation, Pointer

from .conftest import es_store, mongo_store
from .fake_elasticsearch import Documents, FakeElasticsearch, Reply, Request, not_found
from .fake_mongod import Collections, FakeMongod

ODD_NAMES = ["docs@3f2a…", 'say "hi"', "it's", "a/b", "a\\b", "a b?c#d%20&e=f", "Ärzte 文档 🙂"]


def pointer(tag: str, generations: int = 2, *, building: bool = True) -> Pointer:
    return Pointer(
        generations=[
            Generation(
                collection=f"kb_{tag}_g{i}",
                embedding=f"sha256:{tag}:{i}",
                fingerprint={"chunker": f"{tag}-{i}"},
            )
            for i in range(generations)
        ],
        building=Generation(collection=f"kb_{tag}_next", embedding="e") if building else None,
    )


def doc_path(name: str) -> str:
    """The path of the pointer document ``name``, as the client encodes it."""
    return f"/{POINTER_REGISTRY}/_doc/{quote(name, safe='')}"


# --- Elasticsearch ------------------------------------------------------------


async def test_es_read_is_one_realtime_get_and_a_missing_registry_is_none(
    es_server: FakeElasticsearch,
) -> None:
    es_server.respond = lambda request: not_found(POINTER_REGISTRY)
    async with es_store(es_server) as es:
        assert await es.read_pointer("kb") is None

    (get,) = es_server.requests  # a GET, and nothing that could create the index
    assert (get.method, get.path, get.query) == ("GET", doc_path("kb"), {"_source": "pointer"})


async def test_es_read_of_a_missing_document_is_none(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda request: (
        404,
        {"_index": POINTER_REGISTRY, "_id": "kb", "found": False},
    )
    async with es_store(es_server) as es:
        assert await es.read_pointer("kb") is None


async def test_es_read_parses_the_stored_record(es_server: FakeElasticsearch) -> None:
    stored = pointer("one")
    source = {"pointer": stored.model_dump(mode="json")}
    es_server.respond = lambda request: (
        200,
        {"_index": POINTER_REGISTRY, "_id": "kb", "found": True, "_source": source},
    )
    async with es_store(es_server) as es:
        assert await es.read_pointer("kb") == stored


async def test_es_first_write_creates_the_registry_then_indexes_the_document(
    es_server: FakeElasticsearch,
) -> None:
    server = Documents()
    es_server.respond = server
    written = pointer("one")
    async with es_store(es_server) as es:
        await es.write_pointer("kb", written)

    head, create, put = es_server.requests
    assert (head.method, head.path) == ("HEAD", f"/{POINTER_REGISTRY}")
    assert (create.method, create.path) == ("PUT", f"/{POINTER_REGISTRY}")
    assert create.json() == {
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "name": {"type": "keyword"},
                "pointer": {"type": "object", "enabled": False},
            },
        }
    }
    assert (put.method, put.path, put.query) == ("PUT", doc_path("kb"), {"refresh": "wait_for"})
    assert put.json() == {"name": "kb", "pointer": json.loads(written.model_dump_json())}


async def test_es_a_later_write_replaces_the_document_whole(es_server: FakeElasticsearch) -> None:
    server = Documents()
    es_server.respond = server
    async with es_store(es_server, refresh=True) as es:
        await es.write_pointer("kb", pointer("one", 3))
        del es_server.requests[:]
        await es.write_pointer("kb", pointer("two", 1, building=False))

    head, put = es_server.requests  # the registry exists: no create
    assert (head.method, put.method, put.path, put.query) == (
        "HEAD",
        "PUT",  # the index API: the document is replaced, never merged (no _update)
        doc_path("kb"),
        {"refresh": "true"},
    )
    assert server.indexes[POINTER_REGISTRY]["kb"] == {
        "name": "kb",
        "pointer": pointer("two", 1, building=False).model_dump(mode="json"),
    }


async def test_es_delete_removes_the_document_and_tolerates_its_absence(
    es_server: FakeElasticsearch,
) -> None:
    server = Documents()
    es_server.respond = server
    async with es_store(es_server) as es:
        await es.delete_pointer("kb")  # no registry: one HEAD, nothing else
        assert [(r.method, r.path) for r in es_server.requests] == [
            ("HEAD", f"/{POINTER_REGISTRY}")
        ]
        assert POINTER_REGISTRY not in server.indexes

        await es.write_pointer("kb", pointer("one"))
        del es_server.requests[:]
        await es.delete_pointer("kb")
        await es.delete_pointer("kb")  # gone: ES answers 404, a no-op

    deletes = [r for r in es_server.requests if r.method == "DELETE"]
    assert [(r.path, r.query) for r in deletes] == [(doc_path("kb"), {"refresh": "wait_for"})] * 2
    assert server.indexes[POINTER_REGISTRY] == {}


async def test_es_pointers_round_trip_under_any_name(es_server: FakeElasticsearch) -> None:
    server = Documents()
    es_server.respond = server
    records = {name: pointer(f"odd{i}", 1 + i % 3) for i, name in enumerate(ODD_NAMES)}
    async with es_store(es_server) as es:
        assert await es.read_pointer("a/b") is None
        for name, written in records.items():
            await es.write_pointer(name, written)
        for name, written in records.items():
            assert await es.read_pointer(name) == written, name
        assert await es.read_pointer("a") is None

        await es.write_pointer("a/b", pointer("again"))
        await es.delete_pointer("it's")
        assert await es.read_pointer("a/b") == pointer("again")
        assert await es.read_pointer("it's") is None
        assert await es.read_pointer('say "hi"') == records['say "hi"']

    assert set(server.indexes[POINTER_REGISTRY]) == set(ODD_NAMES) - {"it's"}


@pytest.mark.parametrize("operation", ["read", "write", "delete"])
async def test_es_a_refusal_is_a_vector_store_error_and_an_overload_is_retried(
    es_server: FakeElasticsearch, operation: str
) -> None:
    replies = iter(
        [
            (503, {"error": {"type": "unavailable_shards_exception", "reason": "x"}}),
            (400, {"error": {"type": "illegal_argument_exception", "reason": "id too long"}}),
        ]
    )

    def respond(request: Request) -> Reply:
        return (200, None) if request.method == "HEAD" else next(replies)

    es_server.respond = respond
    async with es_store(es_server, max_retries=2) as es:
        with pytest.raises(VectorStoreError, match="HTTP 400 illegal_argument_exception: id too"):
            if operation == "read":
                await es.read_pointer("kb")
            elif operation == "write":
                await es.write_pointer("kb", pointer("one"))
            else:
                await es.delete_pointer("kb")
    assert len([r for r in es_server.requests if r.method != "HEAD"]) == 2


# --- MongoDB ------------------------------------------------------------------


async def test_mongo_read_is_one_find_by_id_that_creates_nothing(mongod: FakeMongod) -> None:
    async with mongo_store(mongod) as store:
        assert await store.read_pointer("kb") is None

    [(name, find)] = mongod.commands
    assert name == "find"
    assert (find["find"], find["$db"], find["filter"], find["limit"]) == (
        POINTER_REGISTRY,
        "rag",
        {"_id": "kb"},
        1,
    )


async def test_mongo_write_replaces_the_document_with_an_upsert(mongod: FakeMongod) -> None:
    written = pointer("one")
    async with mongo_store(mongod) as store:
        await store.write_pointer("kb", written)

    [(name, update)] = mongod.commands  # no create: the upsert makes the collection
    assert (name, update["update"], update["$db"]) == ("update", POINTER_REGISTRY, "rag")
    (statement,) = update["updates"]
    assert statement["q"] == {"_id": "kb"}
    assert statement["u"] == {"_id": "kb", "pointer": written.model_dump_json()}
    assert statement["upsert"] is True
    assert not statement.get("multi")
    assert not any(key.startswith("$") for key in statement["u"])  # a replacement, not an update


async def test_mongo_delete_removes_one_document_by_id(mongod: FakeMongod) -> None:
    async with mongo_store(mongod) as store:
        await store.delete_pointer("kb")

    [(name, delete)] = mongod.commands
    assert (name, delete["delete"]) == ("delete", POINTER_REGISTRY)
    assert delete["deletes"] == [{"q": {"_id": "kb"}, "limit": 1}]


async def test_mongo_pointers_round_trip_under_any_name(mongod: FakeMongod) -> None:
    server = Collections()
    mongod.respond = server
    records = {name: pointer(f"odd{i}", 1 + i % 3) for i, name in enumerate(ODD_NAMES)}
    async with mongo_store(mongod) as store:
        assert await store.read_pointer("kb") is None
        assert not await store.has_collection(POINTER_REGISTRY)
        await store.delete_pointer("kb")
        assert not await store.has_collection(POINTER_REGISTRY)

        for name, written in records.items():
            await store.write_pointer(name, written)
        assert await store.has_collection(POINTER_REGISTRY)
        for name, written in records.items():
            assert await store.read_pointer(name) == written, name

        await store.write_pointer("a/b", pointer("again", 1, building=False))
        await store.delete_pointer("it's")
        await store.delete_pointer("it's")  # gone: a no-op
        assert await store.read_pointer("a/b") == pointer("again", 1, building=False)
        assert await store.read_pointer("it's") is None
        assert await store.read_pointer('say "hi"') == records['say "hi"']

    assert set(server.collections[POINTER_REGISTRY]) == set(ODD_NAMES) - {"it's"}


@pytest.mark.parametrize("operation", ["read", "write", "delete"])
async def test_mongo_a_server_error_is_a_vector_store_error(
    mongod: FakeMongod, operation: str
) -> None:
    mongod.respond = lambda name, command: {
        "ok": 0.0,
        "errmsg": "not authorized on rag to execute command",
        "code": 13,
        "codeName": "Unauthorized",
    }
    async with mongo_store(mongod) as store:
        with pytest.raises(VectorStoreError, match=r"OperationFailure \(code 13\): not author"):
            if operation == "read":
                await store.read_pointer("kb")
            elif operation == "write":
                await store.write_pointer("kb", pointer("one"))
            else:
                await store.delete_pointer("kb")
    assert len(mongod.commands) == 1  # refused, not retried
