"""Elasticsearch: one index per collection, approximate kNN over a ``dense_vector`` field."""

from __future__ import annotations

import json
import math
import struct
from collections.abc import Awaitable, Callable
from functools import partial
from http import HTTPStatus
from types import TracebackType
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field, field_validator

from ..._component import RELATIVE_PATH
from ..._document import Chunk, DocumentSummary, VectorRecord, VectorSearchResult
from ..._errors import VectorStoreError
from ..._extras import require
from ..._redact import redact_url
from ...credential import ElasticsearchCredential, MissingSecretError
from ._paging import pages
from ._pointer import POINTER_REGISTRY, Pointer
from .base import (
    Scalar,
    StoreParameters,
    VectorStoreBase,
    flatten_filter,
    refuse_unencodable,
    with_retries,
)

T = TypeVar("T")

# ES similarity per metric. ``dot`` is ``max_inner_product``: ES's ``dot_product``
# rejects vectors that are not unit length, and our ``dot`` means any inner product.
SIMILARITY = {"cosine": "cosine", "dot": "max_inner_product", "euclidean": "l2_norm"}

_MAX_K = 10_000  # ES caps k and num_candidates here
_PAGE = 500
_TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})
_FORBIDDEN_INDEX_CHARACTERS = frozenset('\\/*?"<>| ,#:')
# A keyword longer than this (in characters) is stored but not indexed, so a huge
# metadata string never fails the write on Lucene's 32766-byte term limit.
_MAX_TERM_CHARACTERS = 8191


# What to do about a record the cluster refused, by the error's type.
_BULK_ADVICE = {
    "cluster_block_exception": " (past the flood-stage disk watermark Elasticsearch blocks "
    "writes: free disk space on the data nodes, and the block lifts once usage falls)",
}
_TOO_LARGE = 413

# The lexical side's score: the inner product of a record's stored weights
# with the query's. Each stored entry is one long, the term id above the
# weight's float32 bits (see ``packed_terms``), so the weights keep the
# precision Qdrant, Milvus and pgvector keep; ``rank_features`` and
# ``sparse_vector`` keep 9 significant bits, which would reorder close hits.
_INNER_PRODUCT = """
double score = 0;
def entries = doc['weighted_terms'];
for (int i = 0; i < entries.size(); ++i) {
  long entry = entries.get(i);
  def weight = params.weights.get(Long.toString(entry >>> 32));
  if (weight != null) {
    score += weight * Float.intBitsToFloat((int) entry);
  }
}
return score;
"""


class _Overloaded(Exception):
    """A retryable HTTP status (429, 502, 503, 504)."""


class ElasticsearchStore(VectorStoreBase):
    """An Elasticsearch index per knowledge base, searched with approximate kNN.

    Each record is one ES document: ``vector`` (``dense_vector``, HNSW over raw
    floats so scores are exact), ``document_id``, ``chunk_index``, the chunk as
    a stored-but-unindexed object, and ``metadata_terms``: one keyword per
    scalar metadata leaf, ``[path, type, value]`` as compact JSON. Exact-match
    filters become ``term`` queries on it. Unlike a ``flattened`` field this
    keeps ``"3"`` apart from ``3`` and ``true``, and a key ``"a.b"`` apart from
    ``{"a": {"b": ...}}``; unlike dynamic keyword mappings it can neither hit a
    mapping type conflict nor grow the mapping with every new metadata key.
    A list's scalar elements each get the list's keyword, so a filter finds
    a list holding its value. An index written before lists were indexed so
    has no keyword for their elements: ``reset`` and ``run`` it again.

    The lexical side (``create_lexical_collection``) adds ``term_ids`` (an
    indexed ``integer`` array: which records hold a term, what ``term_counts``
    counts with a ``filters`` aggregation) and ``weighted_terms`` (each term's
    BM25 weight, doc values only). ``lexical_search`` scores the records
    holding a query term by a ``script_score`` computing the exact inner
    product, not by Elasticsearch's own BM25, so the scores are those of every
    other store (``rag/_retrieval``).

    Credentials come from ``credential`` or the variables ``api_key_env``, or
    ``username_env`` and ``password_env``. Requires an Elasticsearch server
    whose major version matches the client's.
    """

    requires: ClassVar[dict[str, str]] = {"elasticsearch": "elasticsearch"}
    supports_lexical: ClassVar[bool] = True

    class Parameters(StoreParameters):
        hosts: str | list[str] = Field(
            description="URL of an Elasticsearch node, or a list of them.",
        )
        api_key_env: str = Field(
            default="ELASTICSEARCH_API_KEY",
            description="Environment variable holding an API key, if the cluster needs one.",
        )
        username_env: str = Field(
            default="ELASTICSEARCH_USERNAME",
            description="Environment variable holding a basic-auth user name.",
        )
        password_env: str = Field(
            default="ELASTICSEARCH_PASSWORD",
            description="Environment variable holding the basic-auth password.",
        )
        ca_certs: str | None = Field(
            default=None,
            description="CA bundle that signed the cluster's TLS certificate.",
            json_schema_extra=RELATIVE_PATH,
        )
        num_candidates: int = Field(
            default=100,
            ge=1,
            le=_MAX_K,
            description="Candidates each shard considers per search (raised to top_k if lower).",
        )
        refresh: bool | Literal["wait_for"] = Field(
            default="wait_for",
            description="Make writes searchable before returning: wait_for, true (force) or false.",
        )
        batch_size: int = Field(default=500, ge=1, description="Records per bulk request.")
        connect_timeout: float = Field(
            default=5.0,
            gt=0,
            description=(
                "Seconds to open a connection before an attempt fails (and is retried): "
                "a host that does not answer is reported in seconds, not minutes."
            ),
        )
        timeout: float = Field(
            default=30.0, gt=0, description="Seconds to wait for a reply to a request."
        )

        @field_validator("hosts")
        @classmethod
        def _some_host(cls, hosts: str | list[str]) -> str | list[str]:
            if not hosts or (isinstance(hosts, list) and not all(hosts)):
                raise ValueError("give at least one host URL")
            return hosts

    parameters: Parameters

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: ElasticsearchCredential | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        self._credential = credential

    @property
    def store_name(self) -> str:
        hosts = self.parameters.hosts
        urls = [hosts] if isinstance(hosts, str) else hosts
        return f"ElasticsearchStore({', '.join(redact_url(url) for url in urls)})"

    async def __aenter__(self) -> ElasticsearchStore:
        import httpx

        elasticsearch = require("elasticsearch", "elasticsearch")
        p = self.parameters
        # Retries are ours (with backoff, mapped to VectorStoreError), not the transport's.
        # No request_timeout here: the client would pass it with every request as
        # one number for connecting and reading, overriding the nodes' own below.
        self._client = elasticsearch.AsyncElasticsearch(
            hosts=p.hosts,
            node_class="httpxasync",  # httpx is a core dependency; aiohttp would be another
            max_retries=0,
            retry_on_timeout=False,
            ca_certs=p.ca_certs,
            **self._auth(),
            **self.client_kwargs,
        )
        timeout = httpx.Timeout(p.timeout, connect=p.connect_timeout)
        for node in self._client.transport.node_pool.all():
            node.client.timeout = timeout
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._close_client()

    async def probe(self) -> str:
        async with self:  # entering only makes a client
            info = await self._call(self.client.info)
        version = info["version"]["number"] if info is not None else "?"
        return f"the server answers (Elasticsearch {version})"

    def _auth(self) -> dict[str, Any]:
        p = self.parameters
        credential = self._credential or ElasticsearchCredential.from_environment(
            {"api_key": p.api_key_env, "username": p.username_env, "password": p.password_env}
        )
        if credential.api_key is not None:
            return {"api_key": credential.api_key.get_secret_value()}
        if credential.username is None and credential.password is None:
            return {}
        if credential.username is None or credential.password is None:
            raise MissingSecretError(
                f"{self.store_name}: basic auth needs both {p.username_env} and {p.password_env}"
            )
        return {"basic_auth": (credential.username, credential.password.get_secret_value())}

    async def _call(
        self, operation: Callable[[], Awaitable[T]], *, tolerate: frozenset[str] = frozenset()
    ) -> T | None:
        """Run a request with retries; ``None`` if it failed with an error type in ``tolerate``."""
        elasticsearch = require("elasticsearch", "elasticsearch")

        async def attempt() -> T | None:
            try:
                return await operation()
            except elasticsearch.ApiError as exc:
                if exc.message in tolerate:
                    return None
                if exc.meta.status in _TRANSIENT_STATUSES:
                    raise _Overloaded(_describe(exc)) from exc
                cause = _describe(exc)
                if exc.meta.status == _TOO_LARGE:
                    cause += " (past the cluster's http.max_content_length: lower batch_size)"
                if exc.meta.status == 401:
                    p = self.parameters
                    cause += f" (credentials come from {p.api_key_env}, or {p.username_env} and "
                    cause += f"{p.password_env})"
                raise VectorStoreError(self.store_name, cause) from exc

        return await with_retries(
            self.store_name,
            attempt,
            retry_on=(elasticsearch.ConnectionError, elasticsearch.ConnectionTimeout, _Overloaded),
            attempts=self.parameters.max_retries + 1,
        )

    def _index(self, name: str) -> str:
        problem = index_name_problem(name)
        if problem:
            raise ValueError(f"{self.store_name}: invalid index name {name!r}: {problem}")
        return name

    async def create_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=False)

    async def create_lexical_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=True)

    async def _create(self, name: str, dimensions: int, *, lexical: bool) -> None:
        index = self._index(name)
        if await self.has_collection(index):
            return
        mappings = index_mappings(dimensions, self.parameters.distance, lexical=lexical)
        await self._call(
            lambda: self.client.indices.create(index=index, mappings=mappings),
            tolerate=frozenset({"resource_already_exists_exception"}),  # a concurrent create
        )

    async def delete_collection(self, name: str) -> None:
        index = self._index(name)
        await self._call(
            lambda: self.client.indices.delete(index=index),
            tolerate=frozenset({"index_not_found_exception"}),
        )

    async def has_collection(self, name: str) -> bool:
        index = self._index(name)
        return bool(await self._call(lambda: self.client.indices.exists(index=index)))

    async def collection_dimensions(self, name: str) -> int | None:
        fields = await self._fields(name)
        if fields is None:
            return None
        vector = fields.get("vector", {})
        if vector.get("type") == "dense_vector" and "dims" in vector:
            return int(vector["dims"])
        raise VectorStoreError(
            self.store_name, f"index {name!r} has no dense_vector field 'vector' with dims"
        )

    async def has_lexical(self, name: str) -> bool:
        fields = await self._fields(name)
        return fields is not None and "weighted_terms" in fields

    async def _fields(self, name: str) -> dict[str, Any] | None:
        """The index's mapped fields, or ``None`` if it does not exist."""
        index = self._index(name)
        response = await self._call(
            lambda: self.client.indices.get_mapping(index=index),
            tolerate=frozenset({"index_not_found_exception"}),
        )
        if response is None:
            return None
        # Keyed by the concrete index name, which differs from ``name`` for an alias.
        mapping: dict[str, Any] = next(iter(response.body.values()), {})
        return dict(mapping.get("mappings", {}).get("properties", {}))

    async def read_pointer(self, name: str) -> Pointer | None:
        # A GET by id is realtime (no refresh needed) and never creates the index;
        # 404 is either no such pointer or no registry.
        response = await self._call(
            lambda: self.client.options(ignore_status=404).get(
                index=POINTER_REGISTRY, id=name, source=["pointer"]
            )
        )
        assert response is not None
        body = response.body
        if not body.get("found"):
            return None
        return Pointer.model_validate(body["_source"]["pointer"])

    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        # One document per pointer, indexed whole: ES replaces a document atomically.
        if not await self.has_collection(POINTER_REGISTRY):
            await self._call(
                lambda: self.client.indices.create(
                    index=POINTER_REGISTRY, mappings=POINTER_MAPPINGS
                ),
                tolerate=frozenset({"resource_already_exists_exception"}),  # a concurrent create
            )
        document = {"name": name, "pointer": pointer.model_dump(mode="json")}
        await self._call(
            lambda: self.client.index(
                index=POINTER_REGISTRY, id=name, document=document, refresh=self.parameters.refresh
            )
        )

    async def delete_pointer(self, name: str) -> None:
        if not await self.has_collection(POINTER_REGISTRY):
            return  # a delete must not be what creates the registry
        await self._call(
            lambda: self.client.options(ignore_status=404).delete(  # no such pointer
                index=POINTER_REGISTRY, id=name, refresh=self.parameters.refresh
            )
        )

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        refuse_unencodable(self.store_name, records)
        index = self._index(collection)
        for batch in pages(records, self.parameters.batch_size):
            operations: list[dict[str, Any]] = []
            for record in batch:
                chunk = record.chunk
                _id = record.key
                operations.append({"index": {"_index": index, "_id": _id}})
                source = {
                    "vector": record.vector,
                    "document_id": record.document_id,
                    "chunk_index": chunk.chunk_index,
                    "chunk": chunk.model_dump(mode="json"),
                    "metadata_terms": metadata_terms(chunk.metadata),
                }
                if record.terms:  # only a lexical index maps these fields
                    source["term_ids"] = sorted(record.terms)
                    source["weighted_terms"] = packed_terms(record.terms)
                operations.append(source)
            response = await self._call(
                partial(self.client.bulk, operations=operations, refresh=self.parameters.refresh)
            )
            assert response is not None
            if response.body.get("errors"):
                raise VectorStoreError(
                    self.store_name, _bulk_failure(index, response.body["items"], len(batch))
                )

    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        index = self._index(collection)
        clauses = [{"term": {"document_id": document_id}}, *filter_clauses(metadata_filter)]
        await self._call(
            lambda: self.client.delete_by_query(
                index=index,
                query={"bool": {"filter": clauses}},
                conflicts="proceed",
                refresh=self.parameters.refresh is not False,  # this API takes booleans only
            ),
            tolerate=frozenset({"index_not_found_exception"}),  # nothing to delete
        )

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        index = self._index(collection)
        if top_k <= 0:
            return []
        if top_k > _MAX_K:
            raise ValueError(f"{self.store_name}: top_k is at most {_MAX_K}, got {top_k}")
        knn: dict[str, Any] = {
            "field": "vector",
            "query_vector": query_vector,
            "k": top_k,
            "num_candidates": max(self.parameters.num_candidates, top_k),
        }
        clauses = filter_clauses(metadata_filter)
        if clauses:
            knn["filter"] = clauses  # inside knn, so the k nearest are all in scope
        response = await self._call(
            lambda: self.client.search(
                index=index, knn=knn, size=top_k, source=["document_id", "chunk"]
            )
        )
        assert response is not None
        distance = self.parameters.distance
        return [
            VectorSearchResult(
                score=common_score(distance, hit["_score"]),
                document_id=hit["_source"]["document_id"],
                chunk=Chunk.model_validate(hit["_source"]["chunk"]),
            )
            for hit in response.body["hits"]["hits"]
        ]

    async def lexical_search(
        self,
        collection: str,
        weights: dict[int, float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        index = self._index(collection)
        if top_k <= 0 or not weights:
            return []
        if top_k > _MAX_K:
            raise ValueError(f"{self.store_name}: top_k is at most {_MAX_K}, got {top_k}")
        request = lexical_request(weights, top_k, metadata_filter)
        response = await self._call(partial(self.client.search, index=index, **request))
        assert response is not None
        return [
            VectorSearchResult(
                score=hit["_score"],
                document_id=hit["_source"]["document_id"],
                chunk=Chunk.model_validate(hit["_source"]["chunk"]),
            )
            for hit in response.body["hits"]["hits"]
        ]

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        index = self._index(collection)
        wanted = list(dict.fromkeys(terms))
        request = term_counts_request(wanted, metadata_filter)
        response = await self._call(partial(self.client.search, index=index, **request))
        assert response is not None
        body = response.body
        buckets = body.get("aggregations", {}).get("holding", {}).get("buckets", {})
        total = int(body["hits"]["total"]["value"])
        return total, {term: int(buckets[str(term)]["doc_count"]) for term in wanted}

    async def list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[DocumentSummary]:
        index = self._index(collection)
        clauses = filter_clauses(metadata_filter)
        query = {"bool": {"filter": clauses}} if clauses else {"match_all": {}}
        summaries: list[DocumentSummary] = []
        after: dict[str, Any] | None = None
        while True:
            response = await self._call(
                partial(
                    self.client.search,
                    index=index,
                    query=query,
                    size=0,
                    aggregations=documents_aggregation(after),
                )
            )
            assert response is not None
            documents = response.body["aggregations"]["documents"]
            for bucket in documents["buckets"]:
                top_hit = bucket["first_chunk"]["hits"]["hits"][0]
                first = Chunk.model_validate(top_hit["_source"]["chunk"])
                summaries.append(
                    DocumentSummary(
                        document_id=bucket["key"]["document_id"],
                        source=first.source,
                        chunk_count=bucket["doc_count"],
                        metadata=dict(first.metadata),
                    )
                )
            after = documents.get("after_key")
            if not documents["buckets"] or after is None:
                return summaries

    async def _chunk_window(
        self,
        collection: str,
        document_id: str,
        window: range,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Chunk]:
        index = self._index(collection)
        clauses: list[dict[str, Any]] = [
            {"term": {"document_id": document_id}},
            {"range": {"chunk_index": {"gte": window.start, "lt": window.stop}}},
            *filter_clauses(metadata_filter),
        ]
        hits = await self._by_chunk_index(index, clauses, ["chunk"], len(window))
        return [Chunk.model_validate(hit["_source"]["chunk"]) for hit in hits]

    async def document_vectors(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[tuple[Chunk, list[float]]]:
        index = self._index(collection)
        clauses = [{"term": {"document_id": document_id}}, *filter_clauses(metadata_filter)]
        hits = await self._by_chunk_index(index, clauses, ["chunk", "vector"])
        return [
            (Chunk.model_validate(hit["_source"]["chunk"]), hit["_source"]["vector"])
            for hit in hits
        ]

    async def _by_chunk_index(
        self,
        index: str,
        clauses: list[dict[str, Any]],
        source: list[str],
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """The hits of ``clauses`` in ``index`` (``limit`` at most), by ``chunk_index``, with
        ``source``'s fields: ``_PAGE`` at a time, each page after the last one's sort key."""
        found: list[dict[str, Any]] = []
        after: list[Any] | None = None
        while True:
            page: dict[str, Any] = {
                "query": {"bool": {"filter": clauses}},
                "sort": [{"chunk_index": "asc"}],
                "size": _PAGE if limit is None else min(_PAGE, limit - len(found)),
                "source": source,
                "track_total_hits": False,
            }
            if after is not None:
                page["search_after"] = after
            response = await self._call(partial(self.client.search, index=index, **page))
            assert response is not None
            hits = response.body["hits"]["hits"]
            found.extend(hits)
            if len(hits) < page["size"] or (limit is not None and len(found) >= limit):
                return found
            after = hits[-1]["sort"]


# The pointer registry's documents: the name, and the record, kept but not indexed.
POINTER_MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "name": {"type": "keyword"},
        "pointer": {"type": "object", "enabled": False},
    },
}


def index_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an Elasticsearch index name, or ``None`` if it can."""
    if not name:
        return "it is empty"
    if name != name.lower():
        return "Elasticsearch index names must be lower-case"
    if name in {".", ".."} or name[0] in "-_+":
        return "it must not be '.' or '..' nor start with '-', '_' or '+'"
    bad = sorted(set(name) & _FORBIDDEN_INDEX_CHARACTERS)
    if bad:
        return f"it must not contain {' '.join(repr(c) for c in bad)}"
    if len(name.encode()) > 255:
        return "it is longer than 255 bytes"
    return None


def index_mappings(dimensions: int, distance: str, *, lexical: bool = False) -> dict[str, Any]:
    """The mapping of a new index for ``dimensions``-long vectors, and terms if ``lexical``."""
    properties: dict[str, Any] = {
        "vector": {
            "type": "dense_vector",
            "dims": dimensions,
            "index": True,
            "similarity": SIMILARITY[distance],
            "index_options": {"type": "hnsw"},
        },
        "document_id": {"type": "keyword"},
        "chunk_index": {"type": "integer"},
        "chunk": {"type": "object", "enabled": False},
        "metadata_terms": {"type": "keyword", "ignore_above": _MAX_TERM_CHARACTERS},
    }
    if lexical:
        properties["term_ids"] = {"type": "integer"}
        # Read by the scoring script only: doc values, no index.
        properties["weighted_terms"] = {"type": "long", "index": False}
    return {"dynamic": "strict", "properties": properties}


def packed_terms(terms: dict[int, float]) -> list[int]:
    """Each term as one long: its id above its weight's float32 bits, read by ``_INNER_PRODUCT``.

    Weights are positive, so the bits are those of a positive ``int`` and
    every long is too; ids lie below ``TERM_SPACE`` (2^29).
    """
    return [
        term << 32 | struct.unpack("<I", struct.pack("<f", weight))[0]
        for term, weight in sorted(terms.items())
    ]


def lexical_request(
    weights: dict[int, float], top_k: int, metadata_filter: dict[str, Any] | None
) -> dict[str, Any]:
    """The search scoring the records within the filter that hold a query term.

    Ties go by document id and chunk index, as ``_retrieval.ordered`` breaks them.
    """
    holding = {"terms": {"term_ids": sorted(weights)}}
    return {
        "query": {
            "script_score": {
                "query": {"bool": {"filter": [holding, *filter_clauses(metadata_filter)]}},
                "script": {
                    "source": _INNER_PRODUCT,
                    "params": {"weights": {str(term): w for term, w in sorted(weights.items())}},
                },
            }
        },
        "size": top_k,
        "sort": ["_score", {"document_id": "asc"}, {"chunk_index": "asc"}],
        "track_scores": True,
        "source": ["document_id", "chunk"],
    }


def term_counts_request(terms: list[int], metadata_filter: dict[str, Any] | None) -> dict[str, Any]:
    """The count of records within the filter, and of those holding each term."""
    clauses = filter_clauses(metadata_filter)
    request: dict[str, Any] = {
        "query": {"bool": {"filter": clauses}} if clauses else {"match_all": {}},
        "size": 0,
        "track_total_hits": True,  # exact, past ES's default of counting to 10,000
    }
    if terms:
        holding = {str(term): {"term": {"term_ids": term}} for term in terms}
        request["aggregations"] = {"holding": {"filters": {"filters": holding}}}
    return request


def filter_term(path: tuple[str, ...], value: Scalar) -> str:
    """The keyword that stands for ``metadata[path...] == value``.

    Numbers are compared by value (``1`` matches ``1.0``) and kept apart from
    booleans and strings, as ``matches_filter`` does.
    """
    if isinstance(value, bool):
        typed: list[Any] = ["bool", value]
    elif isinstance(value, (int, float)):
        number = int(value) if isinstance(value, float) and value.is_integer() else value
        typed = ["number", number]
    else:
        typed = ["string", value]
    return json.dumps([list(path), *typed], ensure_ascii=False, separators=(",", ":"))


def metadata_terms(metadata: dict[str, Any]) -> list[str]:
    """The filter keywords of every scalar leaf of ``metadata``.

    A list's scalar elements each stand under the list's path, so a ``term``
    query on the keyword array finds a list holding the value; a list or
    mapping inside a list is not descended into, as in ``matches_filter``.
    """
    terms: list[str] = []

    def scalar(prefix: tuple[str, ...], value: Any) -> None:
        if isinstance(value, (str, bool, int)) or (
            isinstance(value, float) and math.isfinite(value)
        ):
            terms.append(filter_term(prefix, value))

    def walk(prefix: tuple[str, ...], value: Any) -> None:
        if isinstance(value, dict):
            for key, inner in value.items():
                walk((*prefix, str(key)), inner)
        elif isinstance(value, list):
            for element in value:
                scalar(prefix, element)
        else:
            scalar(prefix, value)

    walk((), metadata)
    return list(dict.fromkeys(terms))


def filter_clauses(metadata_filter: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``metadata_filter`` as ES ``term`` queries, all of which must match."""
    return [
        {"term": {"metadata_terms": filter_term(path, value)}}
        for path, value in flatten_filter(metadata_filter)
    ]


def documents_aggregation(after: dict[str, Any] | None) -> dict[str, Any]:
    """One page of per-document buckets, each with its lowest-indexed chunk."""
    composite: dict[str, Any] = {
        "size": _PAGE,
        "sources": [{"document_id": {"terms": {"field": "document_id"}}}],
    }
    if after is not None:
        composite["after"] = after
    return {
        "documents": {
            "composite": composite,
            "aggregations": {
                "first_chunk": {
                    "top_hits": {"size": 1, "sort": [{"chunk_index": "asc"}], "_source": ["chunk"]}
                }
            },
        }
    }


def common_score(distance: str, score: float) -> float:
    """ES's positive ``_score`` back on the common scale of ``distance``.

    ES reports cosine as ``(1 + cos) / 2``, ``max_inner_product`` as ``1 + ip``
    (or ``1 / (1 - ip)`` when negative) and ``l2_norm`` as ``1 / (1 + d²)``.
    """
    if distance == "cosine":
        return 2.0 * score - 1.0
    if distance == "dot":
        return score - 1.0 if score >= 1.0 else 1.0 - 1.0 / score
    if score <= 0.0:
        return -math.inf
    return -math.sqrt(max(0.0, 1.0 / score - 1.0))


def _describe(exc: Any) -> str:
    status = exc.meta.status
    if not isinstance(exc.body, dict):  # e.g. the answer to a HEAD request
        try:
            return f"HTTP {status} {HTTPStatus(status).phrase}"
        except ValueError:
            return f"HTTP {status}"
    cause = f"HTTP {status} {exc.message}"
    error = exc.body.get("error")
    if isinstance(error, dict) and error.get("reason"):
        cause += f": {error['reason']}"
    return cause


def _bulk_failure(index: str, items: list[dict[str, Any]], total: int) -> str:
    failures = [item["index"] for item in items if "error" in item.get("index", {})]
    error = failures[0]["error"]
    reason = error.get("reason", "") if isinstance(error, dict) else str(error)
    kind = error.get("type", "error") if isinstance(error, dict) else "error"
    return (
        f"{len(failures)} of {total} records were not written to {index!r}; first: {kind}: {reason}"
        + _BULK_ADVICE.get(kind, "")
    )
