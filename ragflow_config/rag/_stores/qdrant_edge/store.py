"""The Qdrant Edge store: Qdrant's in-process engine (Rust) on a local folder."""

from __future__ import annotations

import asyncio
import errno
import json
import logging
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field

from ...._component import RELATIVE_PATH
from ...._document import Chunk, DocumentSummary, VectorRecord, VectorSearchResult
from ...._errors import VectorStoreError
from ...._extras import require
from .._paging import pages, summarize
from .._pointer import POINTER_REGISTRY, Pointer
from .._qdrant_payload import metadata_key
from ..base import (
    StoreParameters,
    VectorStoreBase,
    creatable,
    disk_failure,
    flatten_filter,
    in_use,
    refuse_unencodable,
)
from ._filter import payload_filter, with_condition
from ._folder import StoreFolder

logger = logging.getLogger("ragflow_config.stores")

T = TypeVar("T")

_LEXICAL = "lexical"  # the sparse vector holding a record's terms
_TERMS = "terms"  # ...and the payload list of its term ids, which term_counts counts
_PAGE = 2048
_BATCH = 512
# The engine's messages for the file-system failures it reports, as errnos.
_ENGINE_ERRNO = {
    "No space left on device": errno.ENOSPC,
    "Read-only file system": errno.EROFS,
    "Permission denied": errno.EACCES,
    "Disk quota exceeded": errno.EDQUOT,
}


class QdrantEdgeStore(VectorStoreBase):
    """A Qdrant Edge shard per collection, in one local folder: no server.

    Qdrant Edge is Qdrant's engine run in this process: an HNSW index for
    dense search, an inverted index for the sparse (lexical) side, payload
    indexes for filters, vectors on disk and int8 copies in memory. A search
    reads what it needs, not every point, and opening the folder loads
    nothing until a collection is used.

    One process has the folder at a time (its ``.lock``); a second is told
    which is the usual holder (a running ``serve``). A run's writes are
    logged ahead by the engine, and the index is optimised when the store is
    left after writing, so the next search finds the new points indexed.
    Points carry ``{"document_id", "chunk"}`` like :class:`QdrantStore`'s,
    and ``metadata_filter`` filters ``chunk.metadata.<key>`` by Qdrant's rules.
    """

    supports_lexical: ClassVar[bool] = True

    requires: ClassVar[dict[str, str]] = {"qdrant_edge": "qdrant-edge"}

    class Parameters(StoreParameters):
        path: str = Field(
            description="Folder of the store (created by the first run).",
            json_schema_extra=RELATIVE_PATH,
        )
        hnsw_m: int = Field(
            default=16, ge=4, le=128, description="Edges per node of the HNSW index."
        )
        hnsw_ef_construct: int = Field(
            default=100, ge=4, le=4096, description="Candidates kept while building the index."
        )
        search_ef: int = Field(
            # 512: recall@10 0.975 against exact search on bench/scale.py's 18,000 chunks,
            # whose repeated paragraphs make near-ties HNSW finds hard (128: 0.83).
            default=512,
            ge=1,
            le=4096,
            description="Candidates kept while searching the index: higher finds more of the "
            "exact nearest neighbours at more CPU per query.",
        )
        quantization: Literal["int8", "none"] = Field(
            default="int8",
            description="`int8`: the index searches one-byte copies of the vectors kept in "
            "memory and rescores the best with the originals, kept on disk, so memory "
            "holds a quarter of the vectors; `none`: the original vectors in memory.",
        )

    parameters: Parameters

    def __init__(self, parameters: Parameters | None = None, **options: Any) -> None:
        super().__init__(parameters, **options)
        self._folder = StoreFolder(Path(self.parameters.path))
        self._shards: dict[str, Any] = {}
        self._written: set[str] = set()
        self._indexed: dict[str, set[str]] = {}

    @property
    def store_name(self) -> str:
        return f"QdrantEdgeStore({self.parameters.path})"

    async def __aenter__(self) -> QdrantEdgeStore:
        self._edge = require("qdrant_edge", "qdrant-edge")
        if self._client is not None:
            return self
        try:
            taken = self._folder.lock()
        except OSError as exc:
            raise disk_failure(self.store_name, self.parameters.path, exc) from exc
        if not taken:
            raise in_use(self.store_name, self._folder.path)
        self._folder.sweep()
        self._client = self._folder  # what `client` hands out: the engine has no client
        self._shards, self._written, self._indexed = {}, set(), {}
        self._loading = asyncio.Lock()  # made here: a lock belongs to one event loop
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            for name, shard in self._shards.items():
                if name in self._written and exc_type is None:
                    # Index what this process wrote, so the next search needs no scan.
                    await self._engine(shard.optimize)
                await self._engine(shard.flush)
                await self._engine(shard.close)
        finally:
            self._shards.clear()
            self._folder.unlock()
            self._client = None

    async def _close_client(self) -> None:
        await self.__aexit__(None, None, None)

    async def preload(self) -> None:
        # A server holds every collection from the start: its first query loads nothing.
        for name in self._folder.collections():
            await self._shard(name)

    async def probe(self) -> str:
        path = self._folder.path
        if not path.exists():
            return creatable(self.store_name, path)
        if not path.is_dir():
            raise VectorStoreError(self.store_name, f"{path} is a file; the store is a folder")
        if self._folder.in_use():
            raise in_use(self.store_name, path)
        return f"{path} opens ({len(self._folder.collections())} collection(s)), not in use"

    # The engine.

    async def _engine(self, call: Callable[..., T], *args: Any) -> T:
        """Run one engine call off the event loop (it releases the GIL), its failures
        as store errors saying what to do."""
        try:
            return await asyncio.to_thread(call, *args)
        except VectorStoreError:
            raise
        except Exception as exc:
            raise self._failure(exc) from exc

    def _failure(self, exc: Exception) -> VectorStoreError:
        message = " ".join(str(exc).split())
        if "WouldBlock" in message:
            return in_use(self.store_name, self._folder.path)
        for text, code in _ENGINE_ERRNO.items():
            if text in message:
                return disk_failure(self.store_name, self.parameters.path, exc, code)
        if isinstance(exc, OSError):
            return disk_failure(self.store_name, self.parameters.path, exc)
        return VectorStoreError(self.store_name, f"{type(exc).__name__}: {message}")

    async def _shard(self, name: str) -> Any:
        """The open shard of collection ``name``; ``VectorStoreError`` if there is none."""
        shard = self._shards.get(name)
        if shard is not None:
            return shard
        async with self._loading:  # one load per shard: the engine locks it to its loader
            shard = self._shards.get(name)
            if shard is None:
                folder = self._collection(name)
                if self._folder.collection_config(name) is None:
                    raise VectorStoreError(self.store_name, f"collection {name!r} does not exist")
                loaded = await self._engine(self._edge.EdgeShard.load, str(folder))
                self._indexed[name] = set((await self._engine(loaded.info)).payload_schema)
                self._shards[name] = shard = loaded
        return shard

    @property
    def _search_params(self) -> Any:
        edge, p = self._edge, self.parameters
        if p.quantization == "none":
            return edge.SearchParams(hnsw_ef=p.search_ef)
        # The int8 copies find twice the candidates, which the originals then rescore.
        rescored = edge.QuantizationSearchParams(rescore=True, oversampling=2.0)
        return edge.SearchParams(hnsw_ef=p.search_ef, quantization=rescored)

    def _collection(self, name: str) -> Path:
        self.client  # noqa: B018 - refuses a store that is not entered
        try:
            return self._folder.collection(name)
        except ValueError as exc:
            raise VectorStoreError(self.store_name, str(exc)) from exc

    def _filter(
        self,
        metadata_filter: dict[str, Any] | None,
        document_id: str | None = None,
        chunk_indexes: range | None = None,
    ) -> Any:
        return payload_filter(
            self._edge, self.store_name, metadata_filter, document_id, chunk_indexes
        )

    # Collections.

    async def create_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=False)

    async def create_lexical_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=True)

    async def _create(self, name: str, dimensions: int, *, lexical: bool) -> None:
        target = self._collection(name)
        if self._folder.collection_config(name) is not None:
            return
        edge, p = self._edge, self.parameters
        quantization = (
            edge.ScalarQuantizationConfig(type=edge.ScalarType.Int8, memory=edge.Memory.Cached)
            if p.quantization == "int8"
            else None
        )
        distance = {"cosine": "Cosine", "dot": "Dot", "euclidean": "Euclid"}[p.distance]
        config = edge.EdgeConfig(
            vectors=edge.EdgeVectorParams(
                size=dimensions,
                distance=getattr(edge.Distance, distance),
                # With int8 copies in memory, the originals are read only to rescore.
                memory=edge.Memory.Cold if quantization is not None else edge.Memory.Cached,
            ),
            sparse_vectors={_LEXICAL: edge.EdgeSparseVectorParams()} if lexical else None,
            hnsw_config=edge.HnswIndexConfig(
                m=p.hnsw_m, ef_construct=p.hnsw_ef_construct, full_scan_threshold=10_000
            ),
            quantization_config=quantization,
        )
        # Made aside and renamed into place: a run killed meanwhile leaves no half collection.
        staging = self._folder.staging(name)
        indexes = [
            # Deletes and listings select by document; an index the HNSW graph does not
            # follow (enable_hnsw off): no search filters on it.
            ("document_id", edge.KeywordIndexParams(enable_hnsw=False)),
            (
                "chunk.chunk_index",
                edge.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False),
            ),
        ]
        if lexical:
            indexes.append(
                (_TERMS, edge.IntegerIndexParams(lookup=True, range=False, enable_hnsw=False))
            )

        def make() -> None:
            shard = edge.EdgeShard.create(str(staging), config)
            for field, params in indexes:
                shard.update(edge.UpdateOperation.create_field_index(field, params))
            shard.flush()
            shard.close()

        await self._engine(make)
        await self._engine(staging.rename, target)

    async def delete_collection(self, name: str) -> None:
        self._collection(name)
        shard = self._shards.pop(name, None)
        if shard is not None:
            await self._engine(shard.close)
        self._written.discard(name)
        await self._engine(self._folder.remove, name)

    async def has_collection(self, name: str) -> bool:
        if name == POINTER_REGISTRY:
            self.client  # noqa: B018
            return self._folder.has_pointers()
        return self._config(name) is not None

    async def collection_dimensions(self, name: str) -> int | None:
        config = self._config(name)
        return None if config is None else int(config["vectors"][""]["size"])

    async def has_lexical(self, name: str) -> bool:
        config = self._config(name)
        return config is not None and _LEXICAL in (config.get("sparse_vectors") or {})

    def _config(self, name: str) -> dict[str, Any] | None:
        self._collection(name)
        return self._folder.collection_config(name)

    # Pointers.

    async def read_pointer(self, name: str) -> Pointer | None:
        self.client  # noqa: B018
        return self._folder.read_pointer(name)

    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        self.client  # noqa: B018
        try:
            self._folder.write_pointer(name, pointer)
        except OSError as exc:
            raise disk_failure(self.store_name, self.parameters.path, exc) from exc

    async def delete_pointer(self, name: str) -> None:
        self.client  # noqa: B018
        self._folder.delete_pointer(name)

    # Writes.

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        refuse_unencodable(self.store_name, records)
        shard = await self._shard(collection)
        await self._index_scopes(collection, shard, records)
        edge = self._edge
        self._written.add(collection)
        for batch in pages(records, _BATCH):
            points = [
                edge.Point(
                    id=_point_id(record),
                    vector=self._vectors(record),
                    payload=_payload(record),
                )
                for record in batch
            ]
            await self._engine(shard.update, edge.UpdateOperation.upsert_points(points))

    def _vectors(self, record: VectorRecord) -> dict[str, Any]:
        """The dense vector, unnamed, and the record's terms as the sparse vector ``lexical``."""
        if not record.terms:
            return {"": record.vector}
        indices = sorted(record.terms)
        values = [record.terms[term] for term in indices]
        return {"": record.vector, _LEXICAL: self._edge.SparseVector(indices, values)}

    async def _index_scopes(self, collection: str, shard: Any, records: list[VectorRecord]) -> None:
        """Index the metadata keys of the records' scopes (their knowledge bases'
        ``metadata_filter``): every search of such a knowledge base filters on them, and
        a tenant index lets the engine search one tenant's points without scanning others."""
        indexed = self._indexed.setdefault(collection, set())
        for scope in {record.scope for record in records if record.scope}:
            for path, value in flatten_filter(json.loads(scope)):
                key = metadata_key(self.store_name, path)
                if key in indexed:
                    continue
                params = self._index_params(value)
                await self._engine(
                    shard.update, self._edge.UpdateOperation.create_field_index(key, params)
                )
                indexed.add(key)

    def _index_params(self, value: Any) -> Any:
        edge = self._edge
        if isinstance(value, bool):
            return edge.PayloadSchemaType.Bool
        if isinstance(value, (int, float)):
            return edge.PayloadSchemaType.Float  # numbers are filtered as float ranges
        return edge.KeywordIndexParams(is_tenant=True)

    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        if not await self.has_collection(collection):
            raise VectorStoreError(self.store_name, f"collection {collection!r} does not exist")
        shard = await self._shard(collection)
        self._written.add(collection)
        selected = self._filter(metadata_filter, document_id)
        await self._engine(
            shard.update, self._edge.UpdateOperation.delete_points_by_filter(selected)
        )

    # Searches.

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        if top_k <= 0:
            return []
        sign = -1.0 if self.parameters.distance == "euclidean" else 1.0
        query = self._edge.Query.Nearest(list(query_vector))
        return await self._best(collection, query, top_k, metadata_filter, sign)

    async def lexical_search(
        self,
        collection: str,
        weights: dict[int, float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        if top_k <= 0 or not weights:
            return []
        edge = self._edge
        terms = sorted(weights)
        sparse = edge.SparseVector(terms, [weights[term] for term in terms])
        query = edge.Query.Nearest(sparse, using=_LEXICAL)
        return await self._best(collection, query, top_k, metadata_filter)

    async def _best(
        self,
        collection: str,
        query: Any,
        top_k: int,
        metadata_filter: dict[str, Any] | None,
        sign: float = 1.0,
    ) -> list[VectorSearchResult]:
        """The ``top_k`` points best for ``query`` within the filter, best first; ``sign``
        turns a distance into a score."""
        edge = self._edge
        shard = await self._shard(collection)
        request = edge.QueryRequest(
            limit=top_k,
            query=query,
            filter=self._filter(metadata_filter),
            with_payload=edge.PayloadSelector.Exclude([_TERMS]),
            params=self._search_params,
        )
        points = await self._engine(shard.query, request)
        return [
            VectorSearchResult(
                score=sign * point.score,
                document_id=point.payload["document_id"],
                chunk=Chunk.model_validate(point.payload["chunk"]),
            )
            for point in points
        ]

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        edge = self._edge
        shard = await self._shard(collection)
        scope = self._filter(metadata_filter)

        def count(condition: Any | None) -> int:
            selected = scope if condition is None else with_condition(edge, scope, condition)
            return int(shard.count(edge.CountRequest(exact=True, filter=selected)))

        def counts() -> tuple[int, dict[int, int]]:
            # Each count reads the terms index: one term's postings, not every point.
            held = {
                term: count(edge.FieldCondition(key=_TERMS, match=edge.MatchValue(term)))
                for term in dict.fromkeys(terms)
            }
            return count(None), held

        return await self._engine(counts)

    # Listings.

    async def list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[DocumentSummary]:
        """Counted by the engine (a facet of the document index), then each document's
        chunk 0 read without its content: two small reads per document, none per chunk."""
        edge = self._edge
        shard = await self._shard(collection)
        scope = self._filter(metadata_filter)
        total = await self._engine(shard.count, edge.CountRequest(exact=True, filter=scope))
        if not total:
            return []
        facet = edge.FacetRequest(key="document_id", limit=total, exact=True, filter=scope)
        counts = {hit.value: hit.count for hit in (await self._engine(shard.facet, facet)).hits}
        first = edge.FieldCondition(key="chunk.chunk_index", range=edge.RangeFloat(lte=0))
        without_content = edge.PayloadSelector.Exclude(["chunk.content", _TERMS])
        heads = {
            record.payload["document_id"]: record.payload["chunk"]
            for record in await self._scroll(
                shard, with_condition(edge, scope, first), without_content
            )
        }
        # A document without its chunk 0 (a write cut short) is described by its lowest.
        lowest = {document_id: 0 for document_id in heads}
        for document_id in counts.keys() - heads.keys():
            chunks = await self._scroll(
                shard,
                self._filter(metadata_filter, document_id),
                edge.PayloadSelector.Include(["chunk.chunk_index"]),
            )
            if chunks:
                lowest[document_id] = min(r.payload["chunk"]["chunk_index"] for r in chunks)
        found = {
            document_id: counts[document_id] for document_id in lowest if document_id in counts
        }
        return await summarize(self, collection, found, lowest, heads, metadata_filter)

    async def _scroll(
        self, shard: Any, selected: Any, payload: Any, vectors: Any = False
    ) -> list[Any]:
        """Every point ``selected`` picks, a page at a time."""
        edge = self._edge

        def read() -> list[Any]:
            found: list[Any] = []
            offset = None
            while True:
                request = edge.ScrollRequest(
                    offset=offset,
                    limit=_PAGE,
                    filter=selected,
                    with_payload=payload,
                    with_vector=vectors,
                )
                page, offset = shard.scroll(request)
                found.extend(page)
                if offset is None:
                    return found

        return await self._engine(read)

    async def _chunk_window(
        self,
        collection: str,
        document_id: str,
        window: range,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Chunk]:
        shard = await self._shard(collection)
        selected = self._filter(metadata_filter, document_id, window)
        records = await self._scroll(shard, selected, self._edge.PayloadSelector.Exclude([_TERMS]))
        return [Chunk.model_validate(record.payload["chunk"]) for record in records]

    async def document_vectors(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[tuple[Chunk, list[float]]]:
        shard = await self._shard(collection)
        selected = self._filter(metadata_filter, document_id)
        records = await self._scroll(
            shard, selected, self._edge.PayloadSelector.Exclude([_TERMS]), vectors=[""]
        )
        return [
            (Chunk.model_validate(record.payload["chunk"]), list(_dense(record.vector)))
            for record in records
        ]


def _dense(vector: Any) -> Iterator[float]:
    return iter(vector[""] if isinstance(vector, dict) else vector)


def _payload(record: VectorRecord) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "document_id": record.document_id,
        "chunk": record.chunk.model_dump(mode="json"),
    }
    if record.terms is not None:
        payload[_TERMS] = sorted(record.terms)
    return payload


def _point_id(record: VectorRecord) -> str:
    return str(uuid.UUID(record.key[:32]))
