"""The lexical side of ElasticsearchStore and MongoDBStore, at the wire.

No server runs here (the contract suite's lexical cases run these stores
against real servers when ``RAGFLOW_TEST_ELASTICSEARCH_URL`` /
``RAGFLOW_TEST_MONGODB_URI`` name them). These tests pin what the stores
send: each record's BM25 weights stored at float32 precision beside its
term ids, a search scoring the exact inner product of the records holding a
query term, and term counts, all within the knowledge base's filter, so a
tenant's IDF never counts another tenant's chunks.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from .conftest import es_store, make_record, mongo_store
from .fake_elasticsearch import FakeElasticsearch, Reply, Request, not_found
from .fake_mongod import FakeMongod, cursor_reply
from .test_elasticsearch import hit, hits, term
from .test_mongodb import is_index_listing, vector_index

TERMS = {2: 1.5, 300_000_000: 0.1, 7: 2.0}  # 0.1 is not a float32: it is stored as one


def float32(value: float) -> float:
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def lexical_record(document_id: str, chunk_index: int, **metadata: Any) -> Any:
    return make_record(document_id, chunk_index, metadata).model_copy(update={"terms": TERMS})


# --- Elasticsearch ------------------------------------------------------------


async def test_es_a_lexical_index_maps_term_ids_and_weights(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda r: (
        (404, None) if r.method == "HEAD" else (200, {"acknowledged": True})
    )
    async with es_store(es_server) as es:
        await es.create_lexical_collection("docs", 3)

    _, create = es_server.requests
    properties = create.json()["mappings"]["properties"]
    assert properties["term_ids"] == {"type": "integer"}
    assert properties["weighted_terms"] == {"type": "long", "index": False}
    assert properties["vector"]["dims"] == 3


async def test_es_has_lexical_reads_the_mapping(es_server: FakeElasticsearch) -> None:
    vector = {"type": "dense_vector", "dims": 3}
    lexical = {
        "vector": vector,
        "term_ids": {"type": "integer"},
        "weighted_terms": {"type": "long"},
    }

    def respond(request: Request) -> Reply:
        index = request.path.split("/")[1]
        if index == "missing":
            return not_found(index)
        properties = lexical if index == "lexical" else {"vector": vector}
        return 200, {f"{index}-000001": {"mappings": {"properties": properties}}}

    es_server.respond = respond
    async with es_store(es_server) as es:
        assert await es.has_lexical("lexical")
        assert not await es.has_lexical("dense")
        assert not await es.has_lexical("missing")
        assert await es.collection_dimensions("lexical") == 3


async def test_es_insert_stores_each_weight_at_float32_beside_the_term_ids(
    es_server: FakeElasticsearch,
) -> None:
    es_server.respond = lambda r: (200, {"took": 1, "errors": False, "items": []})
    async with es_store(es_server) as es:
        await es.insert("docs", [lexical_record("doc", 0), make_record("plain", 0)])

    _, lexical, _, plain = es_server.requests[0].ndjson()
    assert lexical["term_ids"] == [2, 7, 300_000_000]
    # What the scoring script reads: the id above, the weight's float32 bits below.
    decoded = {
        packed >> 32: struct.unpack("<f", struct.pack("<I", packed & 0xFFFFFFFF))[0]
        for packed in lexical["weighted_terms"]
    }
    assert decoded == {term: float32(weight) for term, weight in TERMS.items()}
    assert lexical["weighted_terms"] == sorted(lexical["weighted_terms"])
    assert "term_ids" not in plain and "weighted_terms" not in plain  # a dense index refuses them


async def test_es_lexical_search_scores_the_inner_product_within_the_filter(
    es_server: FakeElasticsearch,
) -> None:
    es_server.respond = lambda r: hits(hit("b", 1, 5.0), hit("a", 0, 2.5))
    weights = {300_000_000: 3.0, 1: 2.0}
    async with es_store(es_server) as es:
        found = await es.lexical_search("docs", weights, 2, {"tenant": "x"})
        assert await es.lexical_search("docs", {}, 2) == []  # no term: no hit, no request

    (request,) = es_server.requests
    assert (request.method, request.path) == ("POST", "/docs/_search")
    body = request.json()
    script_score = body.pop("query")["script_score"]
    assert script_score["query"] == {
        "bool": {
            "filter": [
                {"terms": {"term_ids": [1, 300_000_000]}},
                term(["tenant"], "string", "x"),
            ]
        }
    }
    assert script_score["script"]["params"] == {"weights": {"1": 2.0, "300000000": 3.0}}
    source = script_score["script"]["source"]
    assert "doc['weighted_terms']" in source and "Float.intBitsToFloat((int) entry)" in source
    assert "params.weights.get(Long.toString(entry >>> 32))" in source
    assert body == {
        "size": 2,
        "sort": ["_score", {"document_id": "asc"}, {"chunk_index": "asc"}],
        "track_scores": True,
        "_source": ["document_id", "chunk"],
    }
    assert [(h.document_id, h.chunk.chunk_index, h.score) for h in found] == [
        ("b", 1, 5.0),
        ("a", 0, 2.5),
    ]  # BM25 scores as they are: no similarity conversion


async def test_es_term_counts_count_within_the_filter(es_server: FakeElasticsearch) -> None:
    buckets = {"2": {"doc_count": 3}, "9": {"doc_count": 0}}
    es_server.respond = lambda r: (
        200,
        {
            "hits": {"total": {"value": 12, "relation": "eq"}, "hits": []},
            "aggregations": {"holding": {"buckets": buckets}},
        },
    )
    async with es_store(es_server) as es:
        counted = await es.term_counts("docs", [2, 9, 2], {"tenant": "x"})

    assert counted == (12, {2: 3, 9: 0})
    (request,) = es_server.requests
    assert request.json() == {
        # The filter scopes the query, so the total and every bucket count the tenant only.
        "query": {"bool": {"filter": [term(["tenant"], "string", "x")]}},
        "size": 0,
        "track_total_hits": True,
        "aggregations": {
            "holding": {
                "filters": {
                    "filters": {
                        "2": {"term": {"term_ids": 2}},
                        "9": {"term": {"term_ids": 9}},
                    }
                }
            }
        },
    }


async def test_es_term_counts_without_terms_or_filter(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda r: (200, {"hits": {"total": {"value": 4}, "hits": []}})
    async with es_store(es_server) as es:
        assert await es.term_counts("docs", []) == (4, {})
    (request,) = es_server.requests
    assert request.json() == {"query": {"match_all": {}}, "size": 0, "track_total_hits": True}


# --- MongoDB --------------------------------------------------------------------


async def test_mongo_has_lexical_finds_the_term_index(mongod: FakeMongod) -> None:
    def index(key: dict[str, int], name: str) -> dict[str, Any]:
        return {"v": 2, "key": key, "name": name}

    def respond(name: str, command: dict[str, Any]) -> dict[str, Any] | None:
        if name != "listIndexes":
            return None
        found = [index({"_id": 1}, "_id_")]
        if command["listIndexes"] == "lexical":
            found.append(index({"terms.t": 1}, "terms.t_1"))
        return cursor_reply(command, found)

    mongod.respond = respond
    async with mongo_store(mongod) as store:
        assert await store.has_lexical("lexical")
        assert not await store.has_lexical("dense")


async def test_mongo_insert_stores_terms_at_float32(mongod: FakeMongod) -> None:
    async with mongo_store(mongod) as store:
        await store.insert("docs", [lexical_record("doc", 0), make_record("plain", 0)])

    (update,) = mongod.named("update")
    lexical, plain = (u["u"] for u in update["updates"])
    assert lexical["terms"] == [
        {"t": term, "w": float32(TERMS[term])} for term in (2, 7, 300_000_000)
    ]
    assert "terms" not in plain


async def test_mongo_lexical_search_scores_the_inner_product_within_the_filter(
    mongod: FakeMongod,
) -> None:
    chunk = make_record("doc", 4).chunk.model_dump(mode="json")
    mongod.respond = lambda name, command: (
        cursor_reply(command, [{"document_id": "doc", "chunk": chunk, "score": 4.5}])
        if name == "aggregate"
        else None
    )
    async with mongo_store(mongod) as store:
        # tenant is not in filter_fields: a $match, unlike $vectorSearch, filters on any key.
        (found,) = await store.lexical_search("docs", {9: 3.0, 2: 0.5}, 3, {"tenant": "x"})
        assert await store.lexical_search("docs", {}, 3) == []

    assert (found.document_id, found.chunk.chunk_index, found.score) == ("doc", 4, 4.5)
    (command,) = mongod.named("aggregate")
    match, project, sort, limit = command["pipeline"]
    assert match == {
        "$match": {"$and": [{"terms.t": {"$in": [2, 9]}}, {"chunk.metadata.tenant": {"$eq": "x"}}]}
    }
    # Sum over the record's terms held by the query of w x the query's weight of that term.
    query_weight = {"$arrayElemAt": [[0.5, 3.0], {"$indexOfArray": [[2, 9], "$$this.t"]}]}
    assert project == {
        "$project": {
            "_id": 0,
            "document_id": 1,
            "chunk": 1,
            "score": {
                "$sum": {
                    "$map": {
                        "input": {
                            "$filter": {"input": "$terms", "cond": {"$in": ["$$this.t", [2, 9]]}}
                        },
                        "in": {"$multiply": ["$$this.w", query_weight]},
                    }
                }
            },
        }
    }
    assert sort == {"$sort": {"score": -1, "document_id": 1, "chunk.chunk_index": 1}}
    assert limit == {"$limit": 3}


@pytest.mark.parametrize(
    ("metadata_filter", "scope"),
    [
        ({"tenant": "x"}, [{"$match": {"$and": [{"chunk.metadata.tenant": {"$eq": "x"}}]}}]),
        (None, []),
    ],
)
async def test_mongo_term_counts_count_within_the_filter(
    mongod: FakeMongod, metadata_filter: dict[str, Any] | None, scope: list[dict[str, Any]]
) -> None:
    counted = {"total": [{"n": 12}], "holding": [{"_id": 2, "n": 3}]}
    mongod.respond = lambda name, command: (
        cursor_reply(command, [counted]) if name == "aggregate" else None
    )
    async with mongo_store(mongod) as store:
        assert await store.term_counts("docs", [2, 9, 2], metadata_filter) == (12, {2: 3, 9: 0})

    (command,) = mongod.named("aggregate")
    # The scope comes first, so the total and every term's count are the tenant's.
    assert command["pipeline"] == [
        *scope,
        {
            "$facet": {
                "total": [{"$count": "n"}],
                "holding": [
                    {"$match": {"terms.t": {"$in": [2, 9]}}},
                    {"$unwind": "$terms"},
                    {"$match": {"terms.t": {"$in": [2, 9]}}},
                    {"$group": {"_id": "$terms.t", "n": {"$sum": 1}}},
                ],
            }
        },
    ]


async def test_mongo_term_counts_of_an_empty_scope(mongod: FakeMongod) -> None:
    counted = {"total": [], "holding": []}  # $count emits nothing for no documents
    mongod.respond = lambda name, command: (
        cursor_reply(command, [counted]) if name == "aggregate" else None
    )
    async with mongo_store(mongod) as store:
        assert await store.term_counts("docs", [5], {"tenant": "nobody"}) == (0, {5: 0})


async def test_mongo_a_lexical_collection_indexes_the_term_ids(mongod: FakeMongod) -> None:
    mongod.respond = lambda name, command: (
        cursor_reply(command, [vector_index("READY")]) if is_index_listing(name, command) else None
    )
    async with mongo_store(mongod) as store:
        await store.create_lexical_collection("docs", 3)

    indexed = [index["key"] for c in mongod.named("createIndexes") for index in c["indexes"]]
    assert indexed == [{"document_id": 1, "chunk.chunk_index": 1}, {"terms.t": 1}]
    assert len(mongod.named("createSearchIndexes")) == 0  # the vector index was listed
