"""Elasticsearch: one index per collection, approximate kNN over a ``dense_vector`` field."""

from __future__ import annotations

from functools import partial
from typing import Any, ClassVar

from ...._document import Chunk, DocumentSummary, VectorRecord
from ...._errors import VectorStoreError
from .._paging import pages
from ..base import refuse_unencodable
from ._filter import filter_clauses, metadata_terms
from ._lexical import packed_terms
from ._mappings import index_mappings
from ._pointers import ElasticsearchPointers
from ._search import ElasticsearchSearch

_PAGE = 500
# What to do about a record the cluster refused, by the error's type.
_BULK_ADVICE = {
    "cluster_block_exception": " (past the flood-stage disk watermark Elasticsearch blocks "
    "writes: free disk space on the data nodes, and the block lifts once usage falls)",
}


class ElasticsearchStore(ElasticsearchSearch, ElasticsearchPointers):
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


def _bulk_failure(index: str, items: list[dict[str, Any]], total: int) -> str:
    failures = [item["index"] for item in items if "error" in item.get("index", {})]
    error = failures[0]["error"]
    reason = error.get("reason", "") if isinstance(error, dict) else str(error)
    kind = error.get("type", "error") if isinstance(error, dict) else "error"
    return (
        f"{len(failures)} of {total} records were not written to {index!r}; first: {kind}: {reason}"
        + _BULK_ADVICE.get(kind, "")
    )
