"""ElasticsearchStore against a local HTTP server: the wire requests the official client sends.

No Elasticsearch server runs here. These tests verify the translation into
ES requests, the reading of ES-shaped responses, score conversion and error
mapping at the transport boundary; they do not prove a real cluster accepts
the requests.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from ragflow_config import VectorStoreError
from ragflow_config._document import record_key
from ragflow_config.credential import ElasticsearchCredential, MissingSecretError
from ragflow_config.rag._stores.elasticsearch import ElasticsearchStore, common_score

from .conftest import es_store, make_record
from .fake_elasticsearch import FakeElasticsearch, Reply, Request, not_found


def term(path: list[str], kind: str, value: Any) -> dict[str, Any]:
    encoded = json.dumps([path, kind, value], ensure_ascii=False, separators=(",", ":"))
    return {"term": {"metadata_terms": encoded}}


def hit(
    document_id: str, chunk_index: int, score: float, *, text: str | None = None, **metadata: Any
) -> dict[str, Any]:
    chunk = make_record(document_id, chunk_index, metadata, text=text).chunk.model_dump(mode="json")
    return {
        "_index": "docs",
        "_id": record_key(document_id, chunk_index),
        "_score": score,
        "_source": {"document_id": document_id, "chunk": chunk},
        "sort": [chunk_index],
    }


def hits(*found: dict[str, Any]) -> Reply:
    return 200, {"took": 1, "timed_out": False, "hits": {"hits": list(found)}}


def error(status: int, kind: str, reason: str) -> Reply:
    body = {"type": kind, "reason": reason}
    return status, {"error": {"root_cause": [body], **body}, "status": status}


@pytest.mark.parametrize(
    ("distance", "similarity"),
    [("cosine", "cosine"), ("dot", "max_inner_product"), ("euclidean", "l2_norm")],
)
async def test_create_collection_maps_vector_and_filter_fields(
    es_server: FakeElasticsearch, distance: str, similarity: str
) -> None:
    es_server.respond = lambda r: (
        (404, None) if r.method == "HEAD" else (200, {"acknowledged": True})
    )

    async with es_store(es_server, distance=distance) as es:
        await es.create_collection("docs", 3)

    head, create = es_server.requests
    assert (head.method, head.path) == ("HEAD", "/docs")
    assert (create.method, create.path) == ("PUT", "/docs")
    assert create.json() == {
        "mappings": {
            "dynamic": "strict",
            "properties": {
                "vector": {
                    "type": "dense_vector",
                    "dims": 3,
                    "index": True,
                    "similarity": similarity,
                    "index_options": {"type": "hnsw"},
                },
                "document_id": {"type": "keyword"},
                "chunk_index": {"type": "integer"},
                "chunk": {"type": "object", "enabled": False},
                "metadata_terms": {"type": "keyword", "ignore_above": 8191},
            },
        }
    }


async def test_create_collection_is_a_no_op_when_the_index_exists(
    es_server: FakeElasticsearch,
) -> None:
    async with es_store(es_server) as es:
        await es.create_collection("docs", 3)

    assert [(r.method, r.path) for r in es_server.requests] == [("HEAD", "/docs")]


async def test_collection_dimensions_reads_the_mapping(es_server: FakeElasticsearch) -> None:
    def respond(request: Request) -> Reply:
        if request.path == "/missing/_mapping":
            return not_found("missing")
        vector = {"type": "dense_vector", "dims": 384, "similarity": "cosine"}
        return 200, {"docs-000001": {"mappings": {"properties": {"vector": vector}}}}

    es_server.respond = respond
    async with es_store(es_server) as es:
        assert await es.collection_dimensions("docs") == 384
        assert await es.collection_dimensions("missing") is None


@pytest.mark.parametrize("name", ["Docs", "my docs", "_docs", "a/b", "a*", "", "..", "x" * 256])
async def test_invalid_index_names_are_refused_before_any_request(
    es_server: FakeElasticsearch, name: str
) -> None:
    async with es_store(es_server) as es:
        with pytest.raises(ValueError, match="invalid index name"):
            await es.create_collection(name, 3)
        with pytest.raises(ValueError, match="invalid index name"):
            await es.search(name, [1.0, 0.0, 0.0])
    assert es_server.requests == []


async def test_insert_sends_batched_ndjson_bulk_requests(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda r: (200, {"took": 1, "errors": False, "items": []})
    tags = ["x", 2.0, False, ["y"], {"z": "w"}, None, "x"]
    metadata = {"page": 3, "org": {"team": 'a"b.c'}, "ok": True, "tags": tags, "none": None}
    records = [make_record("doc", i, metadata) for i in range(3)]

    async with es_store(es_server, batch_size=2) as es:
        await es.insert("docs", records)

    first, second = es_server.requests
    assert (first.method, first.path, first.query) == ("PUT", "/_bulk", {"refresh": "wait_for"})
    assert first.headers["content-type"].startswith("application/vnd.elasticsearch+x-ndjson")
    lines = first.ndjson() + second.ndjson()
    assert len(first.ndjson()) == 4 and len(second.ndjson()) == 2
    for record, (action, source) in zip(
        records, zip(lines[::2], lines[1::2], strict=True), strict=True
    ):
        assert action == {
            "index": {"_index": "docs", "_id": record_key("doc", record.chunk.chunk_index)}
        }
        assert source == {
            "vector": record.vector,
            "document_id": "doc",
            "chunk_index": record.chunk.chunk_index,
            "chunk": record.chunk.model_dump(mode="json"),
            # Every scalar leaf is filterable, with its type, and so is each
            # scalar element of a list, under the list's path (once); nulls,
            # and lists and mappings inside a list, are not.
            "metadata_terms": [
                term(["page"], "number", 3)["term"]["metadata_terms"],
                term(["org", "team"], "string", 'a"b.c')["term"]["metadata_terms"],
                term(["ok"], "bool", True)["term"]["metadata_terms"],
                term(["tags"], "string", "x")["term"]["metadata_terms"],
                term(["tags"], "number", 2)["term"]["metadata_terms"],
                term(["tags"], "bool", False)["term"]["metadata_terms"],
            ],
        }


async def test_insert_of_nothing_sends_nothing(es_server: FakeElasticsearch) -> None:
    async with es_store(es_server) as es:
        await es.insert("docs", [])
    assert es_server.requests == []


async def test_bulk_item_errors_are_surfaced(es_server: FakeElasticsearch) -> None:
    failed = {
        "_index": "docs",
        "status": 400,
        "error": {"type": "document_parsing_exception", "reason": "vector has 2 dims, not 3"},
    }
    es_server.respond = lambda r: (
        200,
        {
            "errors": True,
            "items": [{"index": {"_index": "docs", "status": 201}}, {"index": failed}],
        },
    )

    async with es_store(es_server, refresh=False) as es:
        with pytest.raises(VectorStoreError) as caught:
            await es.insert("docs", [make_record("doc", 0), make_record("doc", 1)])

    message = str(caught.value)
    assert message.startswith(f"ElasticsearchStore({es_server.url}): 1 of 2 records")
    assert "document_parsing_exception: vector has 2 dims, not 3" in message
    assert es_server.requests[0].query == {"refresh": "false"}


async def test_search_filters_inside_knn_and_converts_cosine_scores(
    es_server: FakeElasticsearch,
) -> None:
    es_server.respond = lambda r: hits(hit("a", 0, 0.9), hit("b", 2, 0.75))

    async with es_store(es_server, num_candidates=50) as es:
        results = await es.search(
            "docs", [0.5, 0.5, 0.0], top_k=2, metadata_filter={"tenant": "t1", "org": {"id": 7}}
        )

    (request,) = es_server.requests
    assert (request.method, request.path) == ("POST", "/docs/_search")
    assert request.json() == {
        "knn": {
            "field": "vector",
            "query_vector": [0.5, 0.5, 0.0],
            "k": 2,
            "num_candidates": 50,
            "filter": [term(["tenant"], "string", "t1"), term(["org", "id"], "number", 7)],
        },
        "size": 2,
        "_source": ["document_id", "chunk"],
    }
    assert [(r.document_id, r.chunk.chunk_index) for r in results] == [("a", 0), ("b", 2)]
    assert [r.score for r in results] == pytest.approx([0.8, 0.5])


async def test_a_number_filter_keeps_its_fraction_and_finds_a_whole_float_as_an_integer(
    es_server: FakeElasticsearch,
) -> None:
    # 3.5 must not find a chunk whose ratio is 3 (the tenant-leak shape: a filter
    # matching more than it says); 4.0 finds 4, as matches_filter does.
    es_server.respond = lambda r: hits()
    async with es_store(es_server) as es:
        await es.search("docs", [1.0, 0.0, 0.0], top_k=1, metadata_filter={"ratio": 3.5, "n": 4.0})
    (request,) = es_server.requests
    assert request.json()["knn"]["filter"] == [
        term(["ratio"], "number", 3.5),
        term(["n"], "number", 4),
    ]


@pytest.mark.parametrize(
    ("distance", "es_score", "score"),
    [
        ("cosine", 1.0, 1.0),
        ("cosine", 0.25, -0.5),
        ("dot", 3.5, 2.5),  # max_inner_product: ip + 1 when ip >= 0
        ("dot", 0.25, -3.0),  # 1 / (1 - ip) when ip < 0
        ("euclidean", 1.0, 0.0),  # l2_norm: 1 / (1 + d^2)
        ("euclidean", 0.2, -2.0),
    ],
)
async def test_search_scores_are_on_the_common_scale(
    es_server: FakeElasticsearch, distance: str, es_score: float, score: float
) -> None:
    es_server.respond = lambda r: hits(hit("a", 0, es_score))
    async with es_store(es_server, distance=distance) as es:
        (result,) = await es.search("docs", [1.0, 0.0, 0.0], top_k=1)
    assert result.score == pytest.approx(score)
    assert common_score(distance, es_score) == pytest.approx(score)


async def test_search_raises_num_candidates_to_top_k_and_caps_top_k(
    es_server: FakeElasticsearch,
) -> None:
    es_server.respond = lambda r: hits()
    async with es_store(es_server, num_candidates=10) as es:
        assert await es.search("docs", [1.0], top_k=40) == []
        assert await es.search("docs", [1.0], top_k=0) == []
        with pytest.raises(ValueError, match="top_k is at most 10000"):
            await es.search("docs", [1.0], top_k=10_001)
    (request,) = es_server.requests
    assert request.json()["knn"]["num_candidates"] == 40
    assert "filter" not in request.json()["knn"]


async def test_filter_values_and_keys_stay_literal(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda r: hits()
    metadata_filter = {
        "title": 'say "hi"',
        "a.b": "dotted key",
        "op": "$where",
        "nested": {"$ne": 1},  # a dict value nests: the key "$ne" is literal, not an operator
        "flag": False,
        "ratio": 2.0,
    }
    async with es_store(es_server) as es:
        await es.search("docs", [1.0], top_k=1, metadata_filter=metadata_filter)
        unusable_filters: list[dict[str, Any]] = [
            {"tags": ["a"]},
            {"k": {"$in": ["a"]}},
            {"k": None},
            {"k": {}},
        ]
        for unusable in unusable_filters:
            with pytest.raises(ValueError, match="metadata_filter"):
                await es.search("docs", [1.0], top_k=1, metadata_filter=unusable)

    (request,) = es_server.requests
    assert request.json()["knn"]["filter"] == [
        term(["title"], "string", 'say "hi"'),
        term(["a.b"], "string", "dotted key"),  # not the path ["a", "b"]
        term(["op"], "string", "$where"),
        term(["nested", "$ne"], "number", 1),
        term(["flag"], "bool", False),  # never equal to the number 0
        term(["ratio"], "number", 2),  # 2.0 matches a stored 2, as in Python
    ]


async def test_list_documents_pages_a_composite_aggregation(es_server: FakeElasticsearch) -> None:
    def bucket(document_id: str, count: int) -> dict[str, Any]:
        top = hit(document_id, 0, 1.0, page=1)
        return {
            "key": {"document_id": document_id},
            "doc_count": count,
            "first_chunk": {"hits": {"hits": [top]}},
        }

    pages = iter(
        [
            {"after_key": {"document_id": "b"}, "buckets": [bucket("a", 3), bucket("b", 1)]},
            {"after_key": {"document_id": "c"}, "buckets": [bucket("c", 2)]},
            {"buckets": []},
        ]
    )
    es_server.respond = lambda r: (
        200,
        {"hits": {"hits": []}, "aggregations": {"documents": next(pages)}},
    )

    async with es_store(es_server) as es:
        summaries = await es.list_documents("docs", metadata_filter={"page": 1})

    assert [(s.document_id, s.chunk_count, s.source, s.metadata) for s in summaries] == [
        ("a", 3, "a.md", {"page": 1}),
        ("b", 1, "b.md", {"page": 1}),
        ("c", 2, "c.md", {"page": 1}),
    ]
    bodies = [r.json() for r in es_server.requests]
    assert len(bodies) == 3
    for body, after in zip(bodies, [None, {"document_id": "b"}, {"document_id": "c"}], strict=True):
        assert body["size"] == 0
        assert body["query"] == {"bool": {"filter": [term(["page"], "number", 1)]}}
        composite = body["aggregations"]["documents"]["composite"]
        assert composite["sources"] == [{"document_id": {"terms": {"field": "document_id"}}}]
        assert composite.get("after") == after
        assert body["aggregations"]["documents"]["aggregations"] == {
            "first_chunk": {
                "top_hits": {"size": 1, "sort": [{"chunk_index": "asc"}], "_source": ["chunk"]}
            }
        }


async def test_list_documents_without_filter_matches_all(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda r: (200, {"aggregations": {"documents": {"buckets": []}}})
    async with es_store(es_server) as es:
        assert await es.list_documents("docs") == []
    assert es_server.requests[0].json()["query"] == {"match_all": {}}


async def test_document_vectors_reads_chunk_and_vector_and_pages_with_search_after(
    es_server: FakeElasticsearch,
) -> None:
    def with_vector(found: dict[str, Any]) -> dict[str, Any]:
        return {**found, "_source": {**found["_source"], "vector": [0.5, 0.25]}}

    first_page = [with_vector(hit("doc", i, 1.0)) for i in range(500)]
    pages = iter([hits(*first_page), hits(with_vector(hit("doc", 500, 1.0)))])
    es_server.respond = lambda r: next(pages)

    async with es_store(es_server) as es:
        found = await es.document_vectors("docs", "doc", {"p": 1})

    assert [chunk.chunk_index for chunk, _ in found] == list(range(501))
    assert all(vector == [0.5, 0.25] for _, vector in found)
    first, second = (r.json() for r in es_server.requests)
    assert first["query"] == {
        "bool": {"filter": [{"term": {"document_id": "doc"}}, term(["p"], "number", 1)]}
    }
    assert first["_source"] == ["chunk", "vector"]
    assert second["search_after"] == [499]


async def test_list_chunks_queries_the_index_window_and_pages_with_search_after(
    es_server: FakeElasticsearch,
) -> None:
    pages = iter([hits(*(hit("doc", i, 1.0) for i in range(2, 502))), hits(hit("doc", 502, 1.0))])
    es_server.respond = lambda r: next(pages)

    async with es_store(es_server) as es:
        chunks = await es.list_chunks("docs", "doc", offset=2, limit=600, metadata_filter={"p": 1})

    assert [c.chunk_index for c in chunks] == list(range(2, 503))
    first, second = (r.json() for r in es_server.requests)
    assert first == {
        "query": {
            "bool": {
                "filter": [
                    {"term": {"document_id": "doc"}},
                    {"range": {"chunk_index": {"gte": 2, "lt": 602}}},
                    term(["p"], "number", 1),
                ]
            }
        },
        "sort": [{"chunk_index": "asc"}],
        "size": 500,
        "_source": ["chunk"],
        "track_total_hits": False,
    }
    assert second["search_after"] == [501]
    assert second["size"] == 100


async def test_delete_by_query_scopes_to_document_and_filter(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda r: (200, {"deleted": 2})
    async with es_store(es_server) as es:
        await es.delete("docs", "doc-1", metadata_filter={"tenant": "t1"})

    (request,) = es_server.requests
    assert (request.method, request.path) == ("POST", "/docs/_delete_by_query")
    assert request.query == {"conflicts": "proceed", "refresh": "true"}
    assert request.json() == {
        "query": {
            "bool": {
                "filter": [{"term": {"document_id": "doc-1"}}, term(["tenant"], "string", "t1")]
            }
        }
    }


async def test_missing_index_is_a_no_op_for_delete_but_an_error_for_search(
    es_server: FakeElasticsearch,
) -> None:
    es_server.respond = lambda r: not_found("gone")
    async with es_store(es_server) as es:
        await es.delete("gone", "doc")
        await es.delete_collection("gone")
        assert not await es.has_collection("gone")
        with pytest.raises(
            VectorStoreError, match=r"HTTP 404 index_not_found_exception: no such index \[gone\]"
        ):
            await es.search("gone", [1.0])


async def test_overloaded_server_is_retried_then_reported(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda r: error(
        503, "unavailable_shards_exception", "primary shard is not active"
    )
    async with es_store(es_server, max_retries=2) as es:
        with pytest.raises(VectorStoreError) as caught:
            await es.search("docs", [1.0])

    assert len(es_server.requests) == 3
    assert caught.value.store == f"ElasticsearchStore({es_server.url})"
    assert "HTTP 503 unavailable_shards_exception" in caught.value.cause
    assert "gave up after 3 attempts" in caught.value.cause


async def test_a_transient_failure_recovers(es_server: FakeElasticsearch) -> None:
    replies = iter(
        [error(429, "es_rejected_execution_exception", "queue full"), hits(hit("a", 0, 1.0))]
    )
    es_server.respond = lambda r: next(replies)
    async with es_store(es_server, max_retries=1) as es:
        (result,) = await es.search("docs", [1.0])
    assert result.document_id == "a"
    assert len(es_server.requests) == 2


async def test_a_rejected_request_is_not_retried(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda r: error(
        400, "illegal_argument_exception", "the query vector has a different number of dimensions"
    )
    async with es_store(es_server, max_retries=3) as es:
        with pytest.raises(
            VectorStoreError, match="HTTP 400 illegal_argument_exception: the query"
        ):
            await es.search("docs", [1.0])
    assert len(es_server.requests) == 1


async def test_connection_refused_becomes_a_vector_store_error(closed_port: int) -> None:
    url = f"http://127.0.0.1:{closed_port}"
    async with ElasticsearchStore(hosts=url, max_retries=1, timeout=2) as es:
        with pytest.raises(VectorStoreError) as caught:
            await es.has_collection("docs")
    assert caught.value.store == f"ElasticsearchStore({url})"
    assert caught.value.cause.startswith("ConnectionError")
    assert "gave up after 2 attempts" in caught.value.cause


async def test_a_host_that_never_answers_fails_on_the_connect_timeout(
    unanswering_port: int,
) -> None:
    url = f"http://127.0.0.1:{unanswering_port}"
    async with ElasticsearchStore(hosts=url, max_retries=0, connect_timeout=0.5, timeout=60) as es:
        with pytest.raises(VectorStoreError) as caught:
            await es.has_collection("docs")
        # Connecting waits connect_timeout, not the 60 s read timeout: as the
        # store handed them to the HTTP clients (no clock in a test).
        for node in es.client.transport.node_pool.all():
            assert (node.client.timeout.connect, node.client.timeout.read) == (0.5, 60)
    assert caught.value.cause.startswith("ConnectionTimeout")


async def test_a_server_that_is_not_elasticsearch_is_refused(es_server: FakeElasticsearch) -> None:
    es_server.product_header = False
    es_server.respond = lambda r: hits()
    async with es_store(es_server) as es:
        with pytest.raises(VectorStoreError, match="not Elasticsearch"):
            await es.search("docs", [1.0])


async def test_unauthorised_names_the_credential_variables(es_server: FakeElasticsearch) -> None:
    es_server.respond = lambda r: error(
        401, "security_exception", "missing authentication credentials"
    )
    async with es_store(es_server, api_key_env="MY_ES_KEY") as es:
        with pytest.raises(VectorStoreError, match="HTTP 401 security_exception") as caught:
            await es.search("docs", [1.0])
        with pytest.raises(VectorStoreError, match="HTTP 401 Unauthorized"):
            await es.has_collection("docs")  # a HEAD request: no error body
    assert "MY_ES_KEY" in caught.value.cause


async def test_api_key_comes_from_the_named_variable(
    es_server: FakeElasticsearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_ES_KEY", "c2VjcmV0LWtleQ==")
    es = es_store(es_server, api_key_env="MY_ES_KEY")
    async with es:
        await es.has_collection("docs")
    assert es_server.requests[0].headers["authorization"] == "ApiKey c2VjcmV0LWtleQ=="
    assert "c2VjcmV0LWtleQ==" not in json.dumps(es.describe())


async def test_basic_auth_from_a_credential(es_server: FakeElasticsearch) -> None:
    credential = ElasticsearchCredential(username="elastic", password="changeme")
    async with ElasticsearchStore(hosts=es_server.url, credential=credential) as es:
        await es.has_collection("docs")
    expected = base64.b64encode(b"elastic:changeme").decode()
    assert es_server.requests[0].headers["authorization"] == f"Basic {expected}"


async def test_a_user_name_without_password_is_a_clear_error(
    es_server: FakeElasticsearch, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ELASTICSEARCH_API_KEY", raising=False)
    monkeypatch.delenv("ELASTICSEARCH_PASSWORD", raising=False)
    monkeypatch.setenv("ELASTICSEARCH_USERNAME", "elastic")
    with pytest.raises(MissingSecretError, match="ELASTICSEARCH_PASSWORD"):
        async with es_store(es_server):
            pass


def test_store_name_hides_credentials_in_host_urls() -> None:
    es = ElasticsearchStore(hosts=["https://elastic:hunter2@es1:9200", "es2:9200"])
    assert es.store_name == "ElasticsearchStore(https://es1:9200, es2:9200)"


def test_using_a_closed_store_is_a_clear_error() -> None:
    es = ElasticsearchStore(hosts="http://localhost:9200")
    with pytest.raises(VectorStoreError, match="not open"):
        es.client  # noqa: B018
