"""MongoDB Vector Search (Atlas, or self-hosted with mongot): one collection per knowledge base."""

from __future__ import annotations

import asyncio
import contextlib
import struct
import time
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field, SecretStr, field_validator

from ..._document import Chunk, DocumentSummary, VectorRecord, VectorSearchResult
from ..._errors import UnstorableDocumentError, VectorStoreError
from ..._extras import require
from ...credential import MongoDBCredential
from ._paging import pages
from ._pointer import POINTER_REGISTRY, Pointer
from .base import StoreParameters, VectorStoreBase, flatten_filter, refuse_unencodable, with_retries

T = TypeVar("T")

SIMILARITY = {"cosine": "cosine", "dot": "dotProduct", "euclidean": "euclidean"}

_MAX_CANDIDATES = 10_000  # Atlas caps numCandidates (and so limit) here
_MIN_CANDIDATES = 100
_METADATA = "chunk.metadata."
_TERM_IDS = "terms.t"  # a lexical record's term ids, under an ordinary (multikey) index
_INDEX_POLL_SECONDS = (0.5, 5.0)  # first and longest pause between readiness checks
_INDEX_ALREADY_EXISTS = 68
# Write errors that are the document's own: BSONObjectTooLarge (past 16 MiB),
# KeyTooLong (an indexed value past the index key limit).
_UNSTORABLE_CODES = frozenset({10334, 17280})


class MongoDBStore(VectorStoreBase):
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

    class Parameters(StoreParameters):
        database: str = Field(description="Database holding one collection per knowledge base.")
        uri_env: str = Field(
            default="MONGODB_URI", description="Environment variable holding the connection string."
        )
        index_name: str = Field(
            default="vector_index", min_length=1, description="Name of the vector search index."
        )
        filter_fields: tuple[str, ...] = Field(
            default=(),
            description=(
                "Metadata keys a search may filter on, e.g. tenant_id or "
                "chunk.metadata.tenant_id; they enter the vector search index."
            ),
        )
        candidates_per_result: int = Field(
            default=20,
            ge=1,
            description="numCandidates per requested hit (at least 100, at most 10000 in total).",
        )
        index_timeout: float = Field(
            default=120.0, gt=0, description="Seconds to wait for a new index to become queryable."
        )
        batch_size: int = Field(default=500, ge=1, description="Records per bulk write.")
        connect_timeout: float = Field(
            default=5.0,
            gt=0,
            description=(
                "Seconds to find a reachable server and connect before an attempt fails "
                "(and is retried): a server that is down is reported in seconds, not minutes."
            ),
        )
        timeout: float = Field(
            default=30.0, gt=0, description="Seconds to wait on a socket for a reply."
        )

        @field_validator("database")
        @classmethod
        def _database_name(cls, name: str) -> str:
            bad = sorted(set(name) & set('/\\. "$\0'))
            if not name or bad or len(name.encode()) > 63:
                raise ValueError('a MongoDB database name is 1-63 bytes without / \\ . space " $')
            return name

        @field_validator("filter_fields", mode="before")
        @classmethod
        def _none_is_none(cls, fields: Any) -> Any:
            return () if fields is None else fields  # AgentScope's default

        @field_validator("filter_fields")
        @classmethod
        def _normalise(cls, fields: tuple[str, ...]) -> tuple[str, ...]:
            keys = [field.removeprefix(_METADATA) for field in fields]
            for key in keys:
                metadata_key_problem(tuple(key.split(".")), f"filter_fields entry {key!r}")
            return tuple(dict.fromkeys(keys))

    parameters: Parameters

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: MongoDBCredential | None = None,
        uri: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        if uri is not None:
            if credential is not None:
                raise TypeError("pass either `uri` or `credential`, not both")
            credential = MongoDBCredential(uri=SecretStr(uri))
        self._credential = credential
        self._hosts = ""
        self._queryable: set[str] = set()
        self._readiness: asyncio.Lock | None = None

    @property
    def store_name(self) -> str:
        where = f"{self._hosts}/" if self._hosts else ""
        return f"MongoDBStore({where}{self.parameters.database})"

    async def __aenter__(self) -> MongoDBStore:
        pymongo = require("pymongo", "mongodb")
        p = self.parameters
        credential = self._credential or MongoDBCredential.from_environment({"uri": p.uri_env})
        uri = credential.uri.get_secret_value()
        self._hosts = _hosts(uri)
        self._readiness = asyncio.Lock()  # made here: a lock belongs to one event loop
        connect_ms = int(p.connect_timeout * 1000)
        try:
            self._client = pymongo.AsyncMongoClient(
                uri,
                serverSelectionTimeoutMS=connect_ms,
                connectTimeoutMS=connect_ms,
                socketTimeoutMS=int(p.timeout * 1000),
                appname="ragflow-config",
                **self.client_kwargs,
            )
        except pymongo.errors.PyMongoError as exc:
            # The message may quote the connection string, which can hold a password.
            raise VectorStoreError(
                self.store_name, f"{type(exc).__name__}: {str(exc).replace(uri, '<uri>')}"
            ) from None
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._queryable.clear()
        await self._close_client()

    async def probe(self) -> str:
        async with self:  # entering only makes a client
            await self._call(lambda: self._client.admin.command("ping"))
        return "the server answers"

    def _collection(self, name: str) -> Any:
        if self._client is None:
            raise VectorStoreError(self.store_name, "not open; use `async with store:` first")
        problem = collection_name_problem(name)
        if problem:
            raise ValueError(f"{self.store_name}: invalid collection name {name!r}: {problem}")
        return self._client[self.parameters.database][name]

    async def _call(self, operation: Callable[[], Awaitable[T]]) -> T:
        errors = require("pymongo.errors", "mongodb")

        async def attempt() -> T:
            try:
                return await operation()
            except errors.AutoReconnect:  # incl. no server found, network timeouts: retried
                raise
            except errors.PyMongoError as exc:
                raise VectorStoreError(self.store_name, _describe(exc)) from exc

        return await with_retries(
            self.store_name,
            attempt,
            retry_on=(errors.AutoReconnect,),
            attempts=self.parameters.max_retries + 1,
        )

    async def _aggregate(
        self, target: Any, pipeline: list[dict[str, Any]], **options: Any
    ) -> list[dict[str, Any]]:
        """What the aggregation ``pipeline`` over ``target`` gives, run as ``_call`` runs one."""

        async def run() -> list[dict[str, Any]]:
            cursor = await target.aggregate(pipeline, **options)
            return list(await cursor.to_list())

        return await self._call(run)

    async def create_lexical_collection(self, name: str, dimensions: int) -> None:
        await self.create_collection(name, dimensions)
        collection = self._collection(name)
        await self._call(lambda: collection.create_index([(_TERM_IDS, 1)]))

    async def has_lexical(self, name: str) -> bool:
        collection = self._collection(name)
        indexes = await self._call(collection.index_information)
        return any(index["key"] == [(_TERM_IDS, 1)] for index in indexes.values())

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

    def _dimensions(self, name: str, index: dict[str, Any]) -> int:
        dimensions = index_dimensions(index)
        if dimensions is None:
            raise VectorStoreError(
                self.store_name,
                f"search index {self.parameters.index_name!r} on {name!r} has no vector field "
                "'vector'; it was not made by this store",
            )
        return dimensions

    async def _search_index(self, name: str) -> dict[str, Any] | None:
        collection = self._collection(name)

        async def fetch() -> list[dict[str, Any]]:
            cursor = await collection.list_search_indexes(self.parameters.index_name)
            return list(await cursor.to_list())

        indexes = await self._call(fetch)
        return indexes[0] if indexes else None

    async def _ensure_queryable(self, name: str) -> None:
        """Wait until ``name``'s index answers queries with every declared filter field."""
        if name in self._queryable:
            return
        assert self._readiness is not None
        async with self._readiness:  # concurrent first searches check (and update) once
            if name not in self._queryable:
                await self._wait_until_queryable(name)

    async def _wait_until_queryable(self, name: str) -> None:
        p = self.parameters
        index = await self._search_index(name)
        if index is None:
            raise VectorStoreError(
                self.store_name,
                f"collection {name!r} has no vector search index {p.index_name!r}; "
                "create_collection creates it",
            )
        if missing_filter_fields(index, p.filter_fields):
            # Declared since the index was built: add them, keeping its dimensions.
            definition = index_definition(
                self._dimensions(name, index), p.distance, p.filter_fields
            )
            collection = self._collection(name)
            await self._call(lambda: collection.update_search_index(p.index_name, definition))
            index = {"status": "BUILDING", "queryable": False}
        deadline = time.monotonic() + p.index_timeout
        pause = _INDEX_POLL_SECONDS[0]
        while True:
            state = index_state(index)
            if state == "ready":
                self._queryable.add(name)
                return
            if state == "failed":
                raise VectorStoreError(
                    self.store_name,
                    f"search index {p.index_name!r} on {name!r} is {index.get('status')}: "
                    f"{index.get('message', 'no reason given')}",
                )
            if time.monotonic() + pause > deadline:
                raise VectorStoreError(
                    self.store_name,
                    f"search index {p.index_name!r} on {name!r} was not queryable after "
                    f"{p.index_timeout:g}s (status {index.get('status')})",
                )
            await asyncio.sleep(pause)
            pause = min(_INDEX_POLL_SECONDS[1], pause * 2)
            found = await self._search_index(name)
            index = found if found is not None else {"status": "not listed yet"}

    async def read_pointer(self, name: str) -> Pointer | None:
        registry = self._collection(POINTER_REGISTRY)
        # A find on a collection that does not exist finds nothing and creates nothing.
        found = await self._call(lambda: registry.find_one({"_id": name}))
        return None if found is None else Pointer.model_validate_json(found["pointer"])

    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        registry = self._collection(POINTER_REGISTRY)
        # One document per pointer, replaced whole (single-document writes are
        # atomic); the first upsert creates the collection.
        document = {"_id": name, "pointer": pointer.model_dump_json()}
        await self._call(lambda: registry.replace_one({"_id": name}, document, upsert=True))

    async def delete_pointer(self, name: str) -> None:
        registry = self._collection(POINTER_REGISTRY)
        await self._call(lambda: registry.delete_one({"_id": name}))

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

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        target = self._collection(collection)
        if top_k <= 0:
            return []
        p = self.parameters
        if top_k > _MAX_CANDIDATES:
            raise ValueError(f"{self.store_name}: top_k is at most {_MAX_CANDIDATES}, got {top_k}")
        pipeline = search_pipeline(
            p.index_name, query_vector, top_k, p.candidates_per_result, metadata_filter
        )
        undeclared = undeclared_filter_keys(metadata_filter, p.filter_fields)
        if undeclared:
            raise ValueError(
                f"{self.store_name}: metadata_filter key(s) {', '.join(map(repr, undeclared))} "
                f"are not in filter_fields {list(p.filter_fields)}; declare them so they enter "
                "the vector search index"
            )
        await self._ensure_queryable(collection)
        return [
            VectorSearchResult(
                score=common_score(p.distance, found["score"]),
                document_id=found["document_id"],
                chunk=Chunk.model_validate(found["chunk"]),
            )
            for found in await self._aggregate(target, pipeline)
        ]

    async def lexical_search(
        self,
        collection: str,
        weights: dict[int, float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        target = self._collection(collection)
        if top_k <= 0 or not weights:
            return []
        pipeline = lexical_pipeline(weights, top_k, metadata_filter)
        return [
            VectorSearchResult(
                score=found["score"],
                document_id=found["document_id"],
                chunk=Chunk.model_validate(found["chunk"]),
            )
            for found in await self._aggregate(target, pipeline)
        ]

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        target = self._collection(collection)
        wanted = list(dict.fromkeys(terms))
        pipeline = term_counts_pipeline(wanted, metadata_filter)
        (counted,) = await self._aggregate(target, pipeline)
        total = counted["total"][0]["n"] if counted["total"] else 0
        holding = {group["_id"]: group["n"] for group in counted["holding"]}
        return total, {term: holding.get(term, 0) for term in wanted}

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


def metadata_key_problem(path: tuple[str, ...], where: str) -> None:
    """Reject a metadata path MongoDB would read as something else."""
    for key in path:
        if not key or "." in key or key.startswith("$"):
            raise ValueError(
                f"{where}: MongoDB cannot query the metadata key {key!r} "
                "(empty, containing '.', or starting with '$')"
            )


def collection_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a MongoDB collection name, or ``None`` if it can."""
    if not name:
        return "it is empty"
    if "$" in name or "\0" in name:
        return "it must not contain '$' or a NUL character"
    if name.startswith("system."):
        return "names starting with 'system.' are reserved"
    return None


def index_definition(
    dimensions: int, distance: str, filter_fields: tuple[str, ...]
) -> dict[str, Any]:
    """A ``vectorSearch`` index over ``vector`` with ``document_id`` and the declared filters."""
    return {
        "fields": [
            {
                "type": "vector",
                "path": "vector",
                "numDimensions": dimensions,
                "similarity": SIMILARITY[distance],
            },
            {"type": "filter", "path": "document_id"},
            *({"type": "filter", "path": f"{_METADATA}{key}"} for key in filter_fields),
        ]
    }


def index_dimensions(index: dict[str, Any]) -> int | None:
    """The vector length in a ``$listSearchIndexes`` entry, if it indexes ``vector``."""
    for field in index.get("latestDefinition", {}).get("fields", []):
        if field.get("type") == "vector" and field.get("path") == "vector":
            return int(field["numDimensions"])
    return None


def missing_filter_fields(index: dict[str, Any], filter_fields: tuple[str, ...]) -> list[str]:
    """Declared fields a ``$listSearchIndexes`` entry's definition lacks (none if it shows none)."""
    if "latestDefinition" not in index:
        return []
    paths = {
        field["path"]
        for field in index["latestDefinition"].get("fields", [])
        if field.get("type") == "filter"
    }
    return [key for key in filter_fields if f"{_METADATA}{key}" not in paths]


def index_state(index: dict[str, Any]) -> Literal["ready", "building", "failed"]:
    """Whether a ``$listSearchIndexes`` entry answers queries with its latest definition.

    While an updated index rebuilds it stays queryable on the old definition,
    so ``BUILDING`` is not ready even when ``queryable`` is true.
    """
    status = index.get("status")
    if status in {"FAILED", "DELETING", "DOES_NOT_EXIST"}:
        return "failed"
    if index.get("queryable") and status not in {"PENDING", "BUILDING"}:
        return "ready"
    return "building"


def metadata_clauses(metadata_filter: dict[str, Any] | None) -> list[dict[str, Any]]:
    """``metadata_filter`` as ``$eq`` clauses; ``$eq`` keeps a value like "$where" literal.

    On an array ``$eq`` matches an element equal to the value (the list meaning
    of ``metadata_filter``), in ``find`` and in ``$vectorSearch``'s filter alike.
    """
    clauses = []
    for path, value in flatten_filter(metadata_filter):
        metadata_key_problem(path, "metadata_filter")
        clauses.append({_METADATA + ".".join(path): {"$eq": value}})
    return clauses


def undeclared_filter_keys(
    metadata_filter: dict[str, Any] | None, filter_fields: tuple[str, ...]
) -> list[str]:
    keys = [".".join(path) for path, _ in flatten_filter(metadata_filter)]
    return [key for key in keys if key not in filter_fields]


def match_query(
    document_id: str | None,
    metadata_filter: dict[str, Any] | None,
    *,
    chunk_range: tuple[int, int] | None = None,
) -> dict[str, Any]:
    """A ``find``/``delete`` query: the document, a ``chunk_index`` window, the metadata."""
    clauses: list[dict[str, Any]] = []
    if document_id is not None:
        clauses.append({"document_id": {"$eq": document_id}})
    if chunk_range is not None:
        clauses.append({"chunk.chunk_index": {"$gte": chunk_range[0], "$lt": chunk_range[1]}})
    clauses.extend(metadata_clauses(metadata_filter))
    return {"$and": clauses} if clauses else {}


def search_pipeline(
    index_name: str,
    query_vector: list[float],
    top_k: int,
    candidates_per_result: int,
    metadata_filter: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    stage: dict[str, Any] = {
        "index": index_name,
        "path": "vector",
        "queryVector": query_vector,
        "numCandidates": min(_MAX_CANDIDATES, max(_MIN_CANDIDATES, candidates_per_result * top_k)),
        "limit": top_k,
    }
    clauses = metadata_clauses(metadata_filter)
    if clauses:
        stage["filter"] = {"$and": clauses}
    return [
        {"$vectorSearch": stage},
        {
            "$project": {
                "_id": 0,
                "document_id": 1,
                "chunk": 1,
                "score": {"$meta": "vectorSearchScore"},
            }
        },
    ]


def lexical_pipeline(
    weights: dict[int, float], top_k: int, metadata_filter: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The records within the filter holding a query term, by the inner product, best first.

    Ties go by document id and chunk index, as ``_retrieval.ordered`` breaks them.
    """
    ids = sorted(weights)
    query_weight = {
        "$arrayElemAt": [[weights[t] for t in ids], {"$indexOfArray": [ids, "$$this.t"]}]
    }
    held = {"$filter": {"input": "$terms", "cond": {"$in": ["$$this.t", ids]}}}
    score = {"$sum": {"$map": {"input": held, "in": {"$multiply": ["$$this.w", query_weight]}}}}
    return [
        {"$match": {"$and": [{_TERM_IDS: {"$in": ids}}, *metadata_clauses(metadata_filter)]}},
        {"$project": {"_id": 0, "document_id": 1, "chunk": 1, "score": score}},
        {"$sort": {"score": -1, "document_id": 1, "chunk.chunk_index": 1}},
        {"$limit": top_k},
    ]


def term_counts_pipeline(
    terms: list[int], metadata_filter: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """One document: ``total`` (records within the filter) and ``holding`` (per term)."""
    query = match_query(None, metadata_filter)
    return [
        *([{"$match": query}] if query else []),
        {
            "$facet": {
                "total": [{"$count": "n"}],
                "holding": [
                    {"$match": {_TERM_IDS: {"$in": terms}}},
                    {"$unwind": "$terms"},
                    {"$match": {_TERM_IDS: {"$in": terms}}},
                    {"$group": {"_id": "$terms.t", "n": {"$sum": 1}}},
                ],
            }
        },
    ]


def documents_pipeline(metadata_filter: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One group per document: its chunk count and lowest-indexed chunk."""
    query = match_query(None, metadata_filter)
    return [
        *([{"$match": query}] if query else []),
        {
            "$group": {
                "_id": "$document_id",
                "chunk_count": {"$sum": 1},
                "first_chunk": {"$top": {"sortBy": {"chunk.chunk_index": 1}, "output": "$chunk"}},
            }
        },
    ]


def stored_document(record: VectorRecord) -> tuple[str, dict[str, Any]]:
    """The ``_id`` and body of ``record``'s MongoDB document."""
    _id = record.key
    document = {
        "_id": _id,
        "document_id": record.document_id,
        "vector": record.vector,
        "chunk": record.chunk.model_dump(mode="json"),
    }
    if record.terms:
        document["terms"] = [
            {"t": term, "w": _float32(weight)} for term, weight in sorted(record.terms.items())
        ]
    return _id, document


def _float32(value: float) -> float:
    """``value`` at the float32 precision Qdrant, Milvus and pgvector store weights at,
    so the same chunks score the same here."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def common_score(distance: str, score: float) -> float:
    """MongoDB's 0..1 ``vectorSearchScore`` back on the common scale of ``distance``.

    MongoDB reports cosine and dotProduct as ``(1 + x) / 2`` and euclidean
    as ``1 / (1 + d)``.
    """
    if distance in {"cosine", "dot"}:
        return 2.0 * score - 1.0
    if score <= 0.0:
        return float("-inf")
    return -(1.0 / score - 1.0)


def _describe(exc: Any) -> str:
    code = getattr(exc, "code", None)
    return f"{type(exc).__name__}{f' (code {code})' if code is not None else ''}: {exc}"


def _bulk_failure(collection: str, details: dict[str, Any], total: int) -> str:
    failures = details.get("writeErrors", [])
    first = failures[0].get("errmsg", "") if failures else details
    return f"{len(failures)} of {total} records were not written to {collection!r}; first: {first}"


def _hosts(uri: str) -> str:
    """The host list of a connection string, without scheme, credentials or options."""
    rest = uri.partition("://")[2] or uri
    authority = rest.split("/", 1)[0].split("?", 1)[0]
    return authority.rpartition("@")[2]
