"""The Qdrant Edge store's engine: the folder, its shards, collections and pointers."""

from __future__ import annotations

import asyncio
import errno
import logging
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, TypeVar

from pydantic import Field

from ...._component import RELATIVE_PATH
from ...._errors import VectorStoreError
from ...._extras import require
from .._pointer import POINTER_REGISTRY, Pointer
from ..base import StoreParameters, VectorStoreBase, creatable, disk_failure, in_use
from ._filter import payload_filter
from ._folder import StoreFolder

logger = logging.getLogger("ragflow_config.stores")

T = TypeVar("T")
_Opened = TypeVar("_Opened", bound="QdrantEdgeConnection")

LEXICAL = "lexical"  # the sparse vector holding a record's terms
TERMS = "terms"  # ...and the payload list of its term ids, which term_counts counts
PAGE = 2048
BATCH = 512
# The engine's messages for the file-system failures it reports, as errnos.
_ENGINE_ERRNO = {
    "No space left on device": errno.ENOSPC,
    "Read-only file system": errno.EROFS,
    "Permission denied": errno.EACCES,
    "Disk quota exceeded": errno.EDQUOT,
}


class QdrantEdgeConnection(VectorStoreBase):
    """A Qdrant Edge folder opened by this process: its shards, loaded when first used,
    its collections and its pointers. ``QdrantEdgeStore`` adds the searches and writes."""

    class Parameters(StoreParameters):
        path: str = Field(
            description="Folder of the store (created by the first run).",
            json_schema_extra=RELATIVE_PATH,
        )
        # bench/edge_recall.py at 84,000 chunks of bench/scale.py's corpus (hashing model),
        # recall@10 against exact search and engine CPU a query: this denser graph finds
        # 0.975 at search_ef 512 (2.4 ms); m 16 / ef_construct 100 found 0.908 there
        # (1.4 ms) and 0.971 only at 2048 (5.5 ms). It costs 75.6 s of CPU to build
        # instead of 28.2 s. Not the int8 copies: searching the originals finds no more.
        hnsw_m: int = Field(
            default=32, ge=4, le=128, description="Edges per node of the HNSW index."
        )
        hnsw_ef_construct: int = Field(
            default=200, ge=4, le=4096, description="Candidates kept while building the index."
        )
        search_ef: int = Field(
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

    async def __aenter__(self: _Opened) -> _Opened:
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

    async def settle(self) -> None:
        # What __aexit__ does on close: a refreshed collection searched without its index
        # would scan every point until the server stops.
        for name in sorted(self._written):
            shard = self._shards.get(name)
            if shard is not None:
                await self._engine(shard.optimize)
            self._written.discard(name)

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
        # The int8 copies find four times the candidates, which the originals then rescore
        # (x2: recall@10 0.003 lower at the same CPU, bench/edge_recall.py).
        rescored = edge.QuantizationSearchParams(rescore=True, oversampling=4.0)
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
            sparse_vectors={LEXICAL: edge.EdgeSparseVectorParams()} if lexical else None,
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
            # Mapped from its files, not read into memory: a count reads one term's
            # postings, and a process that opens the collection loads nothing of it (at
            # 84,000 chunks the load took 0.39 s of CPU instead of 1.27 s, bench/README.md).
            terms = edge.IntegerIndexParams(
                lookup=True, range=False, enable_hnsw=False, memory=edge.Memory.Cached
            )
            indexes.append((TERMS, terms))

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
        return config is not None and LEXICAL in (config.get("sparse_vectors") or {})

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
