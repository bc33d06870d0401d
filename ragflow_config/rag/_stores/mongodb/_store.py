"""MongoDB Vector Search (Atlas, or self-hosted with mongot): one collection per knowledge base."""

from __future__ import annotations

import contextlib
from typing import Any, ClassVar

from ...._document import Chunk, DocumentSummary, VectorRecord
from ...._errors import UnstorableDocumentError, VectorStoreError
from ...._extras import require
from .._paging import pages
from ..base import refuse_unencodable
from ._filter import match_query
from ._index import index_definition
from ._pipelines import TERM_IDS, documents_pipeline, stored_document
from ._pointers import MongoPointers
from ._search import MongoSearch

_INDEX_ALREADY_EXISTS = 68
# Write errors that are the document's own: BSONObjectTooLarge (past 16 MiB),
# KeyTooLong (an indexed value past the index key limit).
_UNSTORABLE_CODES = frozenset({10334, 17280})


class MongoDBStore(MongoSearch, MongoPointers):
    """A MongoDB collection per knowledge base, searched with ``$vectorSearch``.

    Documents are ``{_id, document_id, vector, chunk}``; ``metadata_filter``
    matches ``chunk.metadata.<key>``. Only keys declared in ``filter_fields``
    (``tenant_id`` or ``chunk.metadata.tenant_id``; nested as ``org.team``) can
    filter a search, because they must be in the vector search index; an
    undeclared one is a ``ValueError``. Deleting and listing accept any key.

    The connection string is ``credential``, ``uri=`` (Python only; it becomes
    a credential and never a parameter), or else the variable ``uri_env``.
    ``create_collection`` builds the index and waits until it is queryable;
    a collection's readiness is checked once per open store, not per search.
    With ``distance: dot`` MongoDB expects unit-length vectors.

    The lexical side (``create_lexical_collection``) keeps a record's BM25
    weights in the document as ``terms: [{t: term id, w: weight}]``, with an
    ordinary index on ``terms.t``. ``lexical_search`` is an aggregation that
    matches the records within the filter holding a query term and sums
    ``w`` times the query's weight over the terms they share: the exact
    inner product, as on every other store (``rag/_retrieval``), not Atlas
    Search's own BM25. It and ``term_counts`` filter with ``$match``, so any
    metadata key scopes them, declared in ``filter_fields`` or not.
    """

    requires: ClassVar[dict[str, str]] = {"pymongo": "mongodb"}
    supports_lexical: ClassVar[bool] = True

    async def create_lexical_collection(self, name: str, dimensions: int) -> None:
        await self.create_collection(name, dimensions)
        collection = self._collection(name)
        await self._call(lambda: collection.create_index([(TERM_IDS, 1)]))

    async def has_lexical(self, name: str) -> bool:
        collection = self._collection(name)
        indexes = await self._call(collection.index_information)
        return any(index["key"] == [(TERM_IDS, 1)] for index in indexes.values())

    async def create_collection(self, name: str, dimensions: int) -> None:
        errors = require("pymongo.errors", "mongodb")
        operations = require("pymongo.operations", "mongodb")
        collection = self._collection(name)
        database = self._client[self.parameters.database]

        async def create() -> None:
            with contextlib.suppress(errors.CollectionInvalid):  # it exists
                await database.create_collection(name)

        await self._call(create)
        await self._call(
            lambda: collection.create_index([("document_id", 1), ("chunk.chunk_index", 1)])
        )
        if await self._search_index(name) is None:
            model = operations.SearchIndexModel(
                definition=index_definition(
                    dimensions, self.parameters.distance, self.parameters.filter_fields
                ),
                name=self.parameters.index_name,
                type="vectorSearch",
            )

            async def create_index() -> None:
                try:
                    await collection.create_search_index(model)
                except errors.OperationFailure as exc:
                    if exc.code != _INDEX_ALREADY_EXISTS:  # else a concurrent create won
                        raise

            await self._call(create_index)
        await self._ensure_queryable(name)

    async def delete_collection(self, name: str) -> None:
        collection = self._collection(name)
        self._queryable.discard(name)
        await self._call(collection.drop)

    async def has_collection(self, name: str) -> bool:
        self._collection(name)
        database = self._client[self.parameters.database]
        names = await self._call(lambda: database.list_collection_names(filter={"name": name}))
        return name in names

    async def collection_dimensions(self, name: str) -> int | None:
        """The index's vector length; ``None`` if the collection or its index does not exist.

        A collection without the index is then completed by ``create_collection``.
        """
        if not await self.has_collection(name):
            return None
        index = await self._search_index(name)
        return None if index is None else self._dimensions(name, index)

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        refuse_unencodable(self.store_name, records)
        errors = require("pymongo.errors", "mongodb")
        bson_errors = require("bson.errors", "mongodb")
        operations = require("pymongo.operations", "mongodb")
        target = self._collection(collection)
        for batch in pages(records, self.parameters.batch_size):
            requests = [
                operations.ReplaceOne({"_id": _id}, document, upsert=True)
                for _id, document in map(stored_document, batch)
            ]

            async def write(requests: list[Any] = requests, total: int = len(batch)) -> None:
                source = records[0].chunk.source
                try:
                    await target.bulk_write(requests, ordered=False)
                except bson_errors.InvalidDocument as exc:
                    # BSON cannot hold it: a NUL in a key, or past the server's
                    # maxBsonObjectSize (DocumentTooLarge); found while encoding.
                    raise UnstorableDocumentError(
                        self.store_name, f"{source}: {type(exc).__name__}: {exc}"
                    ) from exc
                except errors.BulkWriteError as exc:
                    cause = _bulk_failure(collection, exc.details, total)
                    codes = {error.get("code") for error in exc.details.get("writeErrors", [])}
                    if codes and codes <= _UNSTORABLE_CODES:
                        raise UnstorableDocumentError(
                            self.store_name, f"{source}: {cause}"
                        ) from exc
                    raise VectorStoreError(self.store_name, cause) from exc

            await self._call(write)

    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        target = self._collection(collection)
        query = match_query(document_id, metadata_filter)
        await self._call(lambda: target.delete_many(query))

    async def list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[DocumentSummary]:
        target = self._collection(collection)
        pipeline = documents_pipeline(metadata_filter)
        summaries = []
        for group in await self._aggregate(target, pipeline, allowDiskUse=True):
            first = Chunk.model_validate(group["first_chunk"])
            summaries.append(
                DocumentSummary(
                    document_id=group["_id"],
                    source=first.source,
                    chunk_count=group["chunk_count"],
                    metadata=dict(first.metadata),
                )
            )
        return summaries

    async def _chunk_window(
        self,
        collection: str,
        document_id: str,
        window: range,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Chunk]:
        target = self._collection(collection)
        query = match_query(document_id, metadata_filter, chunk_range=(window.start, window.stop))

        async def run() -> list[dict[str, Any]]:
            cursor = target.find(query, {"_id": 0, "chunk": 1})
            return list(await cursor.sort("chunk.chunk_index", 1).limit(len(window)).to_list())

        return [Chunk.model_validate(found["chunk"]) for found in await self._call(run)]

    async def document_vectors(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[tuple[Chunk, list[float]]]:
        target = self._collection(collection)
        query = match_query(document_id, metadata_filter)

        async def run() -> list[dict[str, Any]]:
            cursor = target.find(query, {"_id": 0, "chunk": 1, "vector": 1})
            return list(await cursor.to_list())

        return [
            (Chunk.model_validate(found["chunk"]), found["vector"])
            for found in await self._call(run)
        ]


def _bulk_failure(collection: str, details: dict[str, Any], total: int) -> str:
    failures = details.get("writeErrors", [])
    first = failures[0].get("errmsg", "") if failures else details
    return f"{len(failures)} of {total} records were not written to {collection!r}; first: {first}"
