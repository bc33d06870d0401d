"""MongoDBStore: its query builders, and the commands pymongo really sends over the wire.

No MongoDB server (let alone Atlas Vector Search) runs here. The builders
are asserted exactly; the wire tests run the real driver against a minimal
OP_MSG server that records commands and answers with Atlas-shaped replies.
They prove what the store sends and how it reads answers, not that a real
server accepts it.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import ValidationError

from ragflow_config import VectorStoreError
from ragflow_config._document import record_key
from ragflow_config.credential import MissingSecretError
from ragflow_config.rag._stores.mongodb import (
    MongoDBStore,
    common_score,
    documents_pipeline,
    index_definition,
    index_state,
    match_query,
    metadata_clauses,
    search_pipeline,
)
from ragflow_config.rag._stores.mongodb._filter import undeclared_filter_keys

from .conftest import make_record, mongo_store
from .fake_mongod import FakeMongod, cursor_reply

# --- pure translation -------------------------------------------------------


def test_filter_fields_accept_the_reference_form_and_bare_keys() -> None:
    store = MongoDBStore(
        uri="mongodb://localhost",
        database="rag",
        filter_fields=["chunk.metadata.tenant_id", "tenant_id", "org.team"],
    )
    assert store.parameters.filter_fields == ("tenant_id", "org.team")


@pytest.mark.parametrize("field", ["chunk.metadata.$where", "a..b", "", "$gt"])
def test_unqueryable_filter_fields_are_refused(field: str) -> None:
    with pytest.raises(ValidationError, match="MongoDB cannot query"):
        MongoDBStore.Parameters(database="rag", filter_fields=[field])


@pytest.mark.parametrize("database", ["", "my.db", "a b", "x$", "d" * 64])
def test_invalid_database_names_are_refused(database: str) -> None:
    with pytest.raises(ValidationError, match="database name"):
        MongoDBStore.Parameters(database=database)


def test_index_definition_declares_vector_document_and_metadata_filters() -> None:
    assert index_definition(384, "dot", ("tenant_id", "org.team")) == {
        "fields": [
            {"type": "vector", "path": "vector", "numDimensions": 384, "similarity": "dotProduct"},
            {"type": "filter", "path": "document_id"},
            {"type": "filter", "path": "chunk.metadata.tenant_id"},
            {"type": "filter", "path": "chunk.metadata.org.team"},
        ]
    }


def test_search_pipeline_filters_inside_vector_search_and_projects_the_score() -> None:
    metadata_filter = {"tenant_id": "t1", "org": {"team": 7}}
    assert search_pipeline("vector_index", [0.1, 0.2], 3, 20, metadata_filter) == [
        {
            "$vectorSearch": {
                "index": "vector_index",
                "path": "vector",
                "queryVector": [0.1, 0.2],
                "numCandidates": 100,
                "limit": 3,
                "filter": {
                    "$and": [
                        {"chunk.metadata.tenant_id": {"$eq": "t1"}},
                        {"chunk.metadata.org.team": {"$eq": 7}},
                    ]
                },
            }
        },
        {
            "$project": {
                "_id": 0,
                "document_id": 1,
                "chunk": 1,
                "score": {"$meta": "vectorSearchScore"},
            }
        },
    ]


@pytest.mark.parametrize(("top_k", "candidates"), [(1, 100), (5, 100), (50, 1000), (600, 10_000)])
def test_num_candidates_is_twenty_per_hit_within_atlas_bounds(top_k: int, candidates: int) -> None:
    (stage, _) = search_pipeline("i", [1.0], top_k, 20, None)
    assert stage["$vectorSearch"]["numCandidates"] == candidates
    assert "filter" not in stage["$vectorSearch"]


def test_filter_values_stay_literal_under_eq() -> None:
    metadata_filter = {"title": 'say "hi"', "op": "$where", "flag": True, "dots": "a.b.c"}
    assert metadata_clauses(metadata_filter) == [
        {"chunk.metadata.title": {"$eq": 'say "hi"'}},
        {"chunk.metadata.op": {"$eq": "$where"}},  # a string, never a JavaScript clause
        {"chunk.metadata.flag": {"$eq": True}},
        {"chunk.metadata.dots": {"$eq": "a.b.c"}},
    ]


@pytest.mark.parametrize(
    ("metadata_filter", "message"),
    [
        ({"k": {"$ne": 1}}, "MongoDB cannot query the metadata key '\\$ne'"),
        ({"$where": "1"}, "MongoDB cannot query the metadata key '\\$where'"),
        ({"a.b": 1}, "MongoDB cannot query the metadata key 'a.b'"),
        ({"k": {"$in": ["a", "b"]}}, "must be a string, number or boolean, not list"),
        ({"k": None}, "must be a string, number or boolean, not NoneType"),
    ],
)
def test_operators_and_ambiguous_keys_are_rejected(
    metadata_filter: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        metadata_clauses(metadata_filter)


def test_a_refused_key_is_named_with_the_filter_and_the_reason() -> None:
    with pytest.raises(ValueError) as refused:
        metadata_clauses({"org": {"a.b": 1}})
    assert str(refused.value) == (
        "metadata_filter: MongoDB cannot query the metadata key 'a.b' "
        "(empty, containing '.', or starting with '$')"
    )


def test_a_nested_key_is_declared_by_its_dotted_path() -> None:
    nested = {"org": {"team": "a"}, "tenant": "t"}
    assert undeclared_filter_keys(nested, ("org.team", "tenant")) == []
    assert undeclared_filter_keys(nested, ("org", "tenant")) == ["org.team"]


def test_match_query_combines_document_window_and_metadata() -> None:
    assert match_query("doc", {"p": 1}, chunk_range=(2, 5)) == {
        "$and": [
            {"document_id": {"$eq": "doc"}},
            {"chunk.chunk_index": {"$gte": 2, "$lt": 5}},
            {"chunk.metadata.p": {"$eq": 1}},
        ]
    }
    assert match_query(None, None) == {}


def test_documents_pipeline_groups_with_the_lowest_indexed_chunk() -> None:
    group = {
        "$group": {
            "_id": "$document_id",
            "chunk_count": {"$sum": 1},
            "first_chunk": {"$top": {"sortBy": {"chunk.chunk_index": 1}, "output": "$chunk"}},
        }
    }
    assert documents_pipeline(None) == [group]
    assert documents_pipeline({"t": "x"}) == [
        {"$match": {"$and": [{"chunk.metadata.t": {"$eq": "x"}}]}},
        group,
    ]


@pytest.mark.parametrize(
    ("distance", "mongo_score", "score"),
    [
        ("cosine", 1.0, 1.0),
        ("cosine", 0.25, -0.5),  # (1 + cos) / 2
        ("dot", 0.9, 0.8),  # (1 + dot) / 2
        ("euclidean", 1.0, 0.0),  # 1 / (1 + d)
        ("euclidean", 0.2, -4.0),
    ],
)
def test_scores_are_converted_to_the_common_scale(
    distance: str, mongo_score: float, score: float
) -> None:
    assert common_score(distance, mongo_score) == pytest.approx(score)


@pytest.mark.parametrize(
    ("index", "state"),
    [
        ({"status": "PENDING", "queryable": False}, "building"),
        ({"status": "READY", "queryable": True}, "ready"),
        ({"status": "BUILDING", "queryable": True}, "building"),  # rebuilding after an update
        ({"status": "STALE", "queryable": True}, "ready"),
        ({"status": "FAILED", "queryable": False}, "failed"),
        ({"queryable": True}, "ready"),  # a server that reports no status
    ],
)
def test_index_state(index: dict[str, Any], state: str) -> None:
    assert index_state(index) == state


# --- secrets ------------------------------------------------------------------


def test_the_uri_is_a_credential_never_a_parameter() -> None:
    uri = "mongodb+srv://user:s3cret@cluster.example.net"
    store = MongoDBStore(uri=uri, database="rag")
    assert "s3cret" not in json.dumps(store.describe())
    assert store.parameters.uri_env == "MONGODB_URI"
    with pytest.raises(ValidationError, match="uri"):
        MongoDBStore.Parameters(database="rag", uri=uri)  # type: ignore[call-arg]


async def test_the_uri_comes_from_the_named_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MONGODB_URI", raising=False)
    monkeypatch.delenv("RAG_MONGO", raising=False)
    with pytest.raises(MissingSecretError, match="RAG_MONGO"):
        async with MongoDBStore(database="rag", uri_env="RAG_MONGO"):
            pass


# --- on the wire ----------------------------------------------------------------


def vector_index(status: str, *filters: str, dims: int = 3) -> dict[str, Any]:
    fields = [{"type": "vector", "path": "vector", "numDimensions": dims, "similarity": "cosine"}]
    fields += [{"type": "filter", "path": path} for path in ("document_id", *filters)]
    return {
        "id": "6524096020da840844a4c4a7",
        "name": "vector_index",
        "type": "vectorSearch",
        "status": status,
        "queryable": status in {"READY", "STALE"},
        "latestDefinition": {"fields": fields},
    }


def is_index_listing(name: str, command: dict[str, Any]) -> bool:
    return name == "aggregate" and "$listSearchIndexes" in command["pipeline"][0]


async def test_create_collection_builds_the_index_and_waits_until_queryable(
    mongod: FakeMongod,
) -> None:
    listings = iter(
        [
            [],
            [vector_index("PENDING", "chunk.metadata.t")],
            [vector_index("READY", "chunk.metadata.t")],
        ]
    )
    mongod.respond = lambda name, command: (
        cursor_reply(command, next(listings)) if is_index_listing(name, command) else None
    )

    async with mongo_store(mongod, filter_fields=["t"]) as store:
        await store.create_collection("docs", 3)

    names = [name for name, _ in mongod.commands]
    assert names == [
        "listCollections",
        "create",
        "createIndexes",
        "aggregate",
        "createSearchIndexes",
        "aggregate",
        "aggregate",
    ]
    (create_index,) = mongod.named("createSearchIndexes")
    assert create_index["createSearchIndexes"] == "docs"
    assert create_index["$db"] == "rag"
    assert create_index["indexes"] == [
        {
            "name": "vector_index",
            "type": "vectorSearch",
            "definition": {
                "fields": [
                    {
                        "type": "vector",
                        "path": "vector",
                        "numDimensions": 3,
                        "similarity": "cosine",
                    },
                    {"type": "filter", "path": "document_id"},
                    {"type": "filter", "path": "chunk.metadata.t"},
                ]
            },
        }
    ]
    (regular_index,) = mongod.named("createIndexes")
    assert regular_index["indexes"][0]["key"] == {"document_id": 1, "chunk.chunk_index": 1}


async def test_collection_dimensions_reads_the_index_definition(mongod: FakeMongod) -> None:
    def respond(name: str, command: dict[str, Any]) -> dict[str, Any] | None:
        if name == "listCollections":
            names = {"docs", "bare"} & {command["filter"]["name"]}
            return cursor_reply(command, [{"name": n, "type": "collection"} for n in names])
        if is_index_listing(name, command):
            found = [vector_index("READY", dims=384)] if command["aggregate"] == "docs" else []
            return cursor_reply(command, found)
        return None

    mongod.respond = respond
    async with mongo_store(mongod) as store:
        assert await store.collection_dimensions("docs") == 384
        assert await store.collection_dimensions("bare") is None  # no index yet
        assert await store.collection_dimensions("missing") is None


async def test_insert_sends_batched_upserts_keyed_by_record_key(mongod: FakeMongod) -> None:
    records = [make_record("doc", i, {"t": "x"}) for i in range(3)]
    async with mongo_store(mongod, batch_size=2) as store:
        await store.insert("docs", records)

    first, second = mongod.named("update")
    assert first["ordered"] is False
    assert len(first["updates"]) == 2 and len(second["updates"]) == 1
    for record, update in zip(records, first["updates"] + second["updates"], strict=True):
        _id = record_key("doc", record.chunk.chunk_index)
        assert update == {
            "q": {"_id": _id},
            "u": {
                "_id": _id,
                "document_id": "doc",
                "vector": record.vector,
                "chunk": record.chunk.model_dump(mode="json"),
            },
            "upsert": True,
        }


async def test_failed_writes_are_surfaced(mongod: FakeMongod) -> None:
    def respond(name: str, command: dict[str, Any]) -> dict[str, Any] | None:
        if name != "update":
            return None
        error = {"index": 1, "code": 10334, "errmsg": "BSONObj size: 17000000 is invalid"}
        return {"n": 1, "nModified": 0, "writeErrors": [error], "ok": 1.0}

    mongod.respond = respond
    async with mongo_store(mongod) as store:
        with pytest.raises(VectorStoreError, match="1 of 2 records were not written") as caught:
            await store.insert("docs", [make_record("d", 0), make_record("d", 1)])
    assert "BSONObj size" in caught.value.cause
    assert len(mongod.named("update")) == 1  # a rejected write is not retried


async def test_search_checks_readiness_once_and_converts_scores(mongod: FakeMongod) -> None:
    chunk = make_record("doc", 4, {"t": "x"}).chunk.model_dump(mode="json")

    def respond(name: str, command: dict[str, Any]) -> dict[str, Any] | None:
        if is_index_listing(name, command):
            return cursor_reply(command, [vector_index("READY", "chunk.metadata.t")])
        if name == "aggregate":
            found = {"document_id": "doc", "chunk": chunk, "score": 0.9}
            return cursor_reply(command, [found])
        return None

    mongod.respond = respond
    async with mongo_store(mongod, filter_fields=["chunk.metadata.t"]) as store:
        concurrent = [store.search("docs", [1.0, 0.0, 0.0], 2, {"t": "x"}) for _ in range(3)]
        for results in [
            *await asyncio.gather(*concurrent),
            await store.search("docs", [1.0, 0.0, 0.0], 2, {"t": "x"}),
        ]:
            (result,) = results
            assert result.score == pytest.approx(0.8)
            assert (result.document_id, result.chunk.chunk_index) == ("doc", 4)

    listings = [c for n, c in mongod.commands if is_index_listing(n, c)]
    searches = [c for n, c in mongod.commands if n == "aggregate" and not is_index_listing(n, c)]
    assert len(listings) == 1
    assert len(searches) == 4
    assert searches[0]["pipeline"] == search_pipeline(
        "vector_index", [1.0, 0.0, 0.0], 2, 20, {"t": "x"}
    )


async def test_search_on_an_undeclared_field_is_refused_before_any_command(
    mongod: FakeMongod,
) -> None:
    async with mongo_store(mongod, filter_fields=["tenant_id"]) as store:
        with pytest.raises(ValueError, match=r"'team' are not in filter_fields \['tenant_id'\]"):
            await store.search("docs", [1.0], 3, {"team": "a"})
    assert mongod.commands == []


async def test_a_newly_declared_filter_field_updates_the_index(mongod: FakeMongod) -> None:
    listings = iter([[vector_index("READY")], [vector_index("READY", "chunk.metadata.t")]])
    mongod.respond = lambda name, command: (
        cursor_reply(command, next(listings)) if is_index_listing(name, command) else None
    )
    async with mongo_store(mongod, filter_fields=["t"]) as store:
        await store.search("docs", [1.0, 0.0, 0.0], 1, {"t": "x"})

    (update,) = mongod.named("updateSearchIndex")
    assert update["name"] == "vector_index"
    assert update["definition"] == index_definition(3, "cosine", ("t",))


async def test_search_without_an_index_is_a_clear_error(mongod: FakeMongod) -> None:
    async with mongo_store(mongod) as store:
        with pytest.raises(VectorStoreError, match="has no vector search index 'vector_index'"):
            await store.search("docs", [1.0])


async def test_a_failed_index_is_reported(mongod: FakeMongod) -> None:
    failed = {**vector_index("FAILED"), "message": "numDimensions must be at most 8192"}
    mongod.respond = lambda name, command: (
        cursor_reply(command, [failed]) if is_index_listing(name, command) else None
    )
    async with mongo_store(mongod) as store:
        with pytest.raises(VectorStoreError, match="is FAILED: numDimensions must be at most 8192"):
            await store.search("docs", [1.0])


async def test_an_index_that_never_becomes_queryable_times_out(mongod: FakeMongod) -> None:
    mongod.respond = lambda name, command: (
        cursor_reply(command, [vector_index("BUILDING")])
        if is_index_listing(name, command)
        else None
    )
    async with mongo_store(mongod, index_timeout=0.2) as store:
        with pytest.raises(VectorStoreError, match=r"not queryable after 0.2s \(status BUILDING\)"):
            await store.search("docs", [1.0])


async def test_document_vectors_finds_chunk_and_vector_of_the_document(
    mongod: FakeMongod,
) -> None:
    first = make_record("doc", 0, {"t": "x"}).chunk.model_dump(mode="json")
    mongod.respond = lambda name, command: (
        cursor_reply(command, [{"chunk": first, "vector": [0.5, 0.25]}]) if name == "find" else None
    )
    async with mongo_store(mongod) as store:
        ((chunk, vector),) = await store.document_vectors("docs", "doc", {"t": "x"})

    assert (chunk.chunk_index, vector) == (0, [0.5, 0.25])
    (find,) = mongod.named("find")
    assert find["filter"] == match_query("doc", {"t": "x"})
    assert find["projection"] == {"_id": 0, "chunk": 1, "vector": 1}


async def test_delete_list_documents_and_list_chunks(mongod: FakeMongod) -> None:
    first = make_record("doc", 0, {"t": "x"}).chunk.model_dump(mode="json")

    def respond(name: str, command: dict[str, Any]) -> dict[str, Any] | None:
        if name == "aggregate":
            group = {"_id": "doc", "chunk_count": 3, "first_chunk": first}
            return cursor_reply(command, [group])
        if name == "find":
            return cursor_reply(command, [{"chunk": first}])
        return None

    mongod.respond = respond
    async with mongo_store(mongod) as store:
        await store.delete("docs", "doc", {"t": "x"})
        (summary,) = await store.list_documents("docs", {"t": "x"})
        (chunk,) = await store.list_chunks("docs", "doc", offset=0, limit=10)
        assert await store.list_chunks("docs", "doc", limit=0) == []

    assert (summary.document_id, summary.chunk_count, summary.source) == ("doc", 3, "doc.md")
    assert summary.metadata == {"t": "x"}
    assert chunk.chunk_index == 0

    (delete,) = mongod.named("delete")
    assert delete["deletes"] == [{"q": match_query("doc", {"t": "x"}), "limit": 0}]
    (aggregate,) = mongod.named("aggregate")
    assert aggregate["pipeline"] == documents_pipeline({"t": "x"})
    assert aggregate["allowDiskUse"] is True
    (find,) = mongod.named("find")
    assert find["filter"] == match_query("doc", None, chunk_range=(0, 10))
    assert (find["projection"], find["sort"], find["limit"]) == (
        {"_id": 0, "chunk": 1},
        {"chunk.chunk_index": 1},
        10,
    )


async def test_a_server_error_names_the_store_and_is_not_retried(mongod: FakeMongod) -> None:
    mongod.respond = lambda name, command: {
        "ok": 0.0,
        "errmsg": "PlanExecutor error during aggregation :: caused by :: bad filter",
        "code": 2,
        "codeName": "BadValue",
    }
    async with mongo_store(mongod, max_retries=3) as store:
        with pytest.raises(VectorStoreError) as caught:
            await store.list_documents("docs")
    assert caught.value.store.startswith("MongoDBStore(127.0.0.1:")
    assert caught.value.store.endswith("/rag)")
    assert caught.value.cause.startswith("OperationFailure (code 2): PlanExecutor error")
    assert len(mongod.commands) == 1


async def test_an_unreachable_server_is_retried_then_reported(closed_port: int) -> None:
    uri = f"mongodb://user:s3cret@127.0.0.1:{closed_port}/"
    async with MongoDBStore(uri=uri, database="rag", connect_timeout=0.2, max_retries=1) as store:
        options = store._client.options
        assert (options.server_selection_timeout, options.pool_options.socket_timeout) == (0.2, 30)
        with pytest.raises(VectorStoreError) as caught:
            await store.has_collection("docs")
    assert caught.value.store == f"MongoDBStore(127.0.0.1:{closed_port}/rag)"
    assert caught.value.cause.startswith("ServerSelectionTimeoutError")
    assert "gave up after 2 attempts" in caught.value.cause
    assert "s3cret" not in str(caught.value)


async def test_invalid_collection_names_and_closed_stores_are_clear_errors(
    mongod: FakeMongod,
) -> None:
    store = mongo_store(mongod)
    with pytest.raises(VectorStoreError, match="not open"):
        await store.has_collection("docs")
    async with store:
        with pytest.raises(ValueError, match=r"invalid collection name 'system\.users'"):
            await store.has_collection("system.users")
        with pytest.raises(ValueError, match="top_k is at most 10000"):
            await store.search("docs", [1.0], 10_001)
    assert mongod.commands == []
