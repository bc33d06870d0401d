"""Milvus: a local Milvus Lite file (embedded, no server) or a Milvus server."""

from __future__ import annotations

import asyncio
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import threading
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, TypeVar

from pydantic import Field, field_validator

from ..._component import RELATIVE_PATH
from ..._document import Chunk, DocumentSummary, VectorRecord, VectorSearchResult
from ..._errors import UnstorableDocumentError, VectorStoreError
from ..._extras import require
from ..._redact import redact_urls
from ...credential import MilvusCredential
from ._lite_clock import LiteClock
from ._paging import pages, summarize_keys
from ._pointer import POINTER_REGISTRY, Pointer
from .base import (
    FilterPair,
    StoreParameters,
    VectorStoreBase,
    creatable,
    disk_failure,
    flatten_filter,
    in_use,
    matches_filter,
    refuse_unencodable,
    with_retries,
)

T = TypeVar("T")

_METRICS = {"cosine": "COSINE", "dot": "IP", "euclidean": "L2"}
_SERVER_SCHEMES = ("http://", "https://", "tcp://", "unix:")
_SQLITE_HEADER = b"SQLite format 3\0"  # what a Milvus Lite file is
# Milvus Lite's own rules for the database file name.
_LITE_FILE_NAME = re.compile(r"^[A-Za-z0-9.\-_]{1,36}$")
_COLLECTION_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,254}$")
_ENCODED_PREFIX = "_m_"  # only names this module encodes start with it
# A query returns at most 16384 rows; larger reads page through the primary key.
_QUERY_PAGE = 4096
_MAX_VARCHAR = 65535
_MAX_SEARCH_LIMIT = 16384  # Milvus's largest top k
_MAX_TERMS = 4096  # Milvus's largest array: the distinct terms a chunk can hold
# Less free space than this beside a Milvus Lite file is named as a failure's likely cause.
_LOW_DISK_BYTES = 64 * 1024 * 1024

# Milvus Lite runs one server process per file, shared by every client in this
# process; the last store to leave releases it. Its clock goes with it: a new
# server counts inserted rows from zero.
_lite_users: Counter[str] = Counter()
_lite_clocks: dict[str, LiteClock] = {}
_lite_lock = threading.Lock()


class MilvusLiteStore(VectorStoreBase):
    """A Milvus collection per knowledge base.

    ``uri`` is a local ``.db`` file (Milvus Lite, started in-process) or a
    Milvus server (``http://host:19530``), whose token is ``credential`` or the
    variable ``token_env``. Each entity carries the chunk, its metadata as a
    JSON field, and a hash of the document id, so filters are native
    expressions in which no document id or filter value can change the syntax.

    The lexical side (``create_lexical_collection``) adds ``terms``, a sparse
    vector under an exact inverted index scored by inner product, and
    ``term_ids``, an array of its term ids that ``term_counts`` counts with
    ``array_contains``.
    """

    requires: ClassVar[dict[str, str]] = {"pymilvus": "milvus", "milvus_lite": "milvus"}
    supports_lexical: ClassVar[bool] = True

    class Parameters(StoreParameters):
        uri: str = Field(
            default="./ragflow_milvus.db",
            description="A local Milvus Lite file ending in .db, or a server URI (http://host:19530).",
            json_schema_extra=RELATIVE_PATH,
        )
        token_env: str = Field(
            default="MILVUS_TOKEN",
            description="Environment variable holding a Milvus server's token, if it needs one.",
        )
        batch_size: int = Field(default=256, ge=1, description="Entities per upsert request.")
        timeout: float = Field(default=30.0, gt=0, description="Seconds per request.")

        @field_validator("uri")
        @classmethod
        def _lite_file_name(cls, uri: str) -> str:
            if uri.startswith(_SERVER_SCHEMES):
                return uri
            name = Path(uri).name
            if not name.endswith(".db"):
                raise ValueError(f"a Milvus Lite file must end in .db, got {uri!r}")
            if not _LITE_FILE_NAME.match(name):
                raise ValueError(
                    f"Milvus Lite file names are at most 36 letters, digits, '.', '-' or '_'; "
                    f"got {name!r}"
                )
            return uri

    parameters: Parameters

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: MilvusCredential | None = None,
        metric_type: str | None = None,
        **options: Any,
    ) -> None:
        if metric_type is not None:  # AgentScope's name of `distance`
            options["distance"] = metric_type
        super().__init__(parameters, **options)
        self._credential = credential
        self._lite_path: str | None = None
        self._lexical: dict[str, bool] = {}
        self._turn: AbstractAsyncContextManager[Any] = nullcontext()
        self._clock: LiteClock | None = None
        self._registry_loaded = False

    @property
    def store_name(self) -> str:
        return f"MilvusLiteStore({redact_urls(self.parameters.uri)})"

    @property
    def is_lite(self) -> bool:
        return not self.parameters.uri.startswith(_SERVER_SCHEMES)

    async def __aenter__(self) -> MilvusLiteStore:
        pymilvus = require("pymilvus", "milvus")
        p = self.parameters
        if self.is_lite:
            require("milvus_lite", "milvus")
            path = Path(p.uri).expanduser().resolve()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise disk_failure(self.store_name, str(path.parent), exc) from exc
            if _lite_in_use(path):
                # Asked before starting: Milvus Lite's failed start deletes the lock
                # file the other process holds, and a third would then start beside it.
                raise in_use(self.store_name, path)
            self._lite_path = str(path)
            # Milvus Lite serves one request at a time (one lock around every
            # operation), so concurrent requests queue in its server, where
            # `timeout` would count the wait behind every other file's write:
            # 64 files in flight timed out at 21,000 chunks. Queued here, a
            # request's timeout covers its own work.
            self._turn = asyncio.Lock()  # made here: a lock belongs to one event loop
            with _lite_lock:
                _lite_users[self._lite_path] += 1
                self._clock = _lite_clocks.setdefault(self._lite_path, LiteClock())
            try:
                # Starting the embedded server blocks for about half a second.
                self._client = await asyncio.to_thread(
                    pymilvus.AsyncMilvusClient,
                    uri=self._lite_path,
                    timeout=p.timeout,
                    **self.client_kwargs,
                )
            except pymilvus.exceptions.MilvusException as exc:
                advice = self._disk_advice()
                self._release_lite()
                raise VectorStoreError(
                    self.store_name,
                    f"cannot start Milvus Lite on {path} (is another process using it?): "
                    f"{exc.message}{advice}",
                ) from exc
            except OSError as exc:
                self._release_lite()
                raise disk_failure(self.store_name, str(path), exc) from exc
        else:
            credential = self._credential or MilvusCredential.from_environment(
                {"token": p.token_env}
            )
            token = credential.token.get_secret_value() if credential.token else ""
            self._client = pymilvus.AsyncMilvusClient(
                uri=p.uri, token=token, timeout=p.timeout, **self.client_kwargs
            )
        try:
            await self._call(lambda client: client.list_collections(timeout=p.timeout))
        except BaseException:
            await self._close()
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._close()

    async def probe(self) -> str:
        p = self.parameters
        if not self.is_lite:  # entering a server's store connects and lists, writing nothing
            async with self:
                names = await self._call(lambda client: client.list_collections(timeout=p.timeout))
            return f"the server answers ({len(names)} collection(s))"
        # Starting Milvus Lite creates the file, its folder and a lock file beside
        # it: what it would open is checked here instead.
        require("milvus_lite", "milvus")
        path = Path(p.uri).expanduser().resolve()
        if not path.exists():
            return creatable(self.store_name, path)
        try:
            with path.open("rb") as file:
                header = file.read(len(_SQLITE_HEADER))
        except OSError as exc:
            raise VectorStoreError(self.store_name, f"cannot read {path}: {exc}") from exc
        if header != _SQLITE_HEADER:
            raise VectorStoreError(
                self.store_name, f"{path} is not a Milvus Lite file; choose another path"
            )
        if _lite_in_use(path):
            raise in_use(self.store_name, path)
        return f"{path} opens, not in use"

    async def _close(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()
        self._release_lite()

    def _release_lite(self) -> None:
        if self._lite_path is None:
            return
        path, self._lite_path = self._lite_path, None
        self._clock = None
        with _lite_lock:
            _lite_users[path] -= 1
            if _lite_users[path] > 0:
                return
            del _lite_users[path]
            del _lite_clocks[path]
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(path)

    def _disk_advice(self) -> str:
        """Why a Milvus Lite request may have failed, when its disk is (nearly) full.

        Milvus Lite reports a full disk only as a request that timed out
        ("Retry timeout: 30.0s"), so the folder's free space is checked.
        """
        if self._lite_path is None:
            return ""
        folder = Path(self._lite_path).parent
        try:
            free = shutil.disk_usage(folder).free
        except OSError:
            return ""
        if free >= _LOW_DISK_BYTES:
            return ""
        return f"; the disk holding {folder} has {free // 1024} KiB free: free space there"

    async def _call(self, operation: Callable[[Any], Awaitable[T]]) -> T:
        """Run an idempotent request, retrying while the server is unreachable."""
        from pymilvus.exceptions import MilvusException

        async def attempt() -> T:
            try:
                async with self._turn:
                    if self._clock is not None:
                        await self._clock.settle()
                    return await operation(self.client)
            except MilvusException as exc:
                if _unreachable(exc):
                    raise ConnectionError(exc.message) from exc
                raise VectorStoreError(self.store_name, exc.message + self._disk_advice()) from exc

        attempts = 1 if self.is_lite else self.parameters.max_retries + 1
        return await with_retries(
            self.store_name,
            attempt,
            retry_on=(ConnectionError, TimeoutError),
            attempts=attempts,
        )

    async def create_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=False)

    async def create_lexical_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=True)

    async def _create(self, name: str, dimensions: int, *, lexical: bool) -> None:
        timeout = self.parameters.timeout
        self._lexical.pop(name, None)
        if await self.has_collection(name):
            # A server may have restarted with the collection released.
            await self._call(
                lambda client: client.load_collection(milvus_name(name), timeout=timeout)
            )
            return
        pymilvus = require("pymilvus", "milvus")
        DataType = pymilvus.DataType
        schema = pymilvus.AsyncMilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, max_length=64, is_primary=True)
        schema.add_field("document_key", DataType.VARCHAR, max_length=64)
        schema.add_field("document_id", DataType.VARCHAR, max_length=_MAX_VARCHAR)
        schema.add_field("chunk_index", DataType.INT64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimensions)
        schema.add_field("chunk", DataType.JSON)
        schema.add_field("metadata", DataType.JSON)
        if lexical:
            schema.add_field("terms", DataType.SPARSE_FLOAT_VECTOR)
            schema.add_field(
                "term_ids", DataType.ARRAY, element_type=DataType.INT64, max_capacity=_MAX_TERMS
            )
        index_params = pymilvus.AsyncMilvusClient.prepare_index_params()
        index_params.add_index(
            field_name="vector",
            index_type="AUTOINDEX",
            metric_type=_METRICS[self.parameters.distance],
        )
        if lexical:  # an inverted index: every posting is scored, so the inner product is exact
            index_params.add_index(
                field_name="terms", index_type="SPARSE_INVERTED_INDEX", metric_type="IP"
            )
        # Passing the index makes Milvus build and load the collection.
        await self._call(
            lambda client: client.create_collection(
                milvus_name(name), schema=schema, index_params=index_params, timeout=timeout
            )
        )

    async def delete_collection(self, name: str) -> None:
        self._lexical.pop(name, None)
        if name == POINTER_REGISTRY:
            self._registry_loaded = False
        if await self.has_collection(name):
            await self._call(
                lambda client: client.drop_collection(
                    milvus_name(name), timeout=self.parameters.timeout
                )
            )

    async def has_collection(self, name: str) -> bool:
        return bool(
            await self._call(
                lambda client: client.has_collection(
                    milvus_name(name), timeout=self.parameters.timeout
                )
            )
        )

    async def collection_dimensions(self, name: str) -> int | None:
        if not await self.has_collection(name):
            return None
        description = await self._call(
            lambda client: client.describe_collection(
                milvus_name(name), timeout=self.parameters.timeout
            )
        )
        for field in description["fields"]:
            if field["name"] == "vector":
                return int(field["params"]["dim"])
        raise VectorStoreError(self.store_name, f"collection {name!r} has no vector field")

    async def has_lexical(self, name: str) -> bool:
        if name not in self._lexical:
            description = await self._call(
                lambda client: client.describe_collection(
                    milvus_name(name), timeout=self.parameters.timeout
                )
            )
            self._lexical[name] = any(f["name"] == "terms" for f in description["fields"])
        return self._lexical[name]

    # Pointers: one entity per write in the registry, never replaced in place.
    # Milvus Lite runs an upsert as a delete stamped at the present and an
    # insert stamped just after it, so a read in between found no pointer at
    # all (measured: 82 of 377 reads during 200 upserts, two stores on one
    # file). So a write inserts a new version beside the old, waits until it
    # is visible, and only then deletes the old; a read takes the latest
    # version it sees, and sees the old one or the new one, never none.

    async def read_pointer(self, name: str) -> Pointer | None:
        if not await self.has_collection(POINTER_REGISTRY):
            return None
        await self._load_registry()
        rows = [row for row in await self._pointer_versions(name) if row["name"] == name]
        if not rows:
            return None
        latest = max(rows, key=lambda row: (row["version"], row["id"]))
        return Pointer.model_validate_json(latest["pointer"])

    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        text = pointer.model_dump_json()
        for what, value in (("name", name), ("record", text)):
            if len(value.encode()) > _MAX_VARCHAR:
                raise VectorStoreError(
                    self.store_name,
                    f"pointer {name[:80]!r}: its {what} is longer than Milvus's VARCHAR limit "
                    f"of {_MAX_VARCHAR} bytes",
                )
        if not await self.has_collection(POINTER_REGISTRY):
            await self._create_registry()
        await self._load_registry()
        key = _pointer_key(name)
        older = await self._pointer_versions(name)
        version = max((int(row["version"]) for row in older), default=0) + 1
        # The nonce keeps two concurrent writers' entities apart; the later id wins a tie.
        row_id = f"{key}:{version:020d}:{uuid.uuid4().hex}"
        row = {
            "id": row_id,
            "key": key,
            "version": version,
            "name": name,
            "pointer": text,
            "vector": [1.0, 0.0],
        }
        await self._upsert(POINTER_REGISTRY, [row])  # a new id: nothing to delete first
        await self._until_visible(row_id)
        if older:
            stale = [str(old["id"]) for old in older]  # hex digits and ':', nothing to escape
            await self._call(
                lambda client: client.delete(
                    milvus_name(POINTER_REGISTRY), ids=stale, timeout=self.parameters.timeout
                )
            )

    async def delete_pointer(self, name: str) -> None:
        if not await self.has_collection(POINTER_REGISTRY):
            return
        await self._load_registry()
        key = _pointer_key(name)
        await self._call(
            lambda client: client.delete(
                milvus_name(POINTER_REGISTRY),
                filter=f'key == "{key}"',  # a hex digest: nothing to escape
                timeout=self.parameters.timeout,
            )
        )

    async def _pointer_versions(self, name: str) -> list[Any]:
        """Every stored version of the pointer ``name`` (more than one only mid-write)."""
        key = _pointer_key(name)
        return list(
            await self._call(
                lambda client: client.query(
                    milvus_name(POINTER_REGISTRY),
                    filter=f'key == "{key}"',
                    output_fields=["id", "version", "name", "pointer"],
                    timeout=self.parameters.timeout,
                    consistency_level="Strong",
                )
            )
        )

    async def _until_visible(self, row_id: str) -> None:
        """Return once a read finds the entity ``row_id``, just inserted."""
        deadline = time.monotonic() + self.parameters.timeout
        pause = 0.001
        while True:
            found = await self._call(
                lambda client: client.query(
                    milvus_name(POINTER_REGISTRY),
                    filter=f'id == "{row_id}"',
                    output_fields=["id"],
                    timeout=self.parameters.timeout,
                    consistency_level="Strong",
                )
            )
            if found:
                return
            if time.monotonic() + pause > deadline:
                raise VectorStoreError(
                    self.store_name,
                    f"a pointer written to {POINTER_REGISTRY!r} was not readable after "
                    f"{self.parameters.timeout:g}s",
                )
            await asyncio.sleep(pause)
            pause = min(0.1, pause * 2)

    async def _create_registry(self) -> None:
        """The pointer registry: a version of a pointer per entity, and the vector Milvus requires."""
        pymilvus = require("pymilvus", "milvus")
        DataType = pymilvus.DataType
        schema = pymilvus.AsyncMilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, max_length=128, is_primary=True)
        schema.add_field("key", DataType.VARCHAR, max_length=64)  # the name's digest
        schema.add_field("version", DataType.INT64)
        schema.add_field("name", DataType.VARCHAR, max_length=_MAX_VARCHAR)
        schema.add_field("pointer", DataType.VARCHAR, max_length=_MAX_VARCHAR)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=2)
        index_params = pymilvus.AsyncMilvusClient.prepare_index_params()
        index_params.add_index(field_name="vector", index_type="AUTOINDEX", metric_type="L2")
        await self._call(
            lambda client: client.create_collection(
                milvus_name(POINTER_REGISTRY),
                schema=schema,
                index_params=index_params,
                consistency_level="Strong",
                timeout=self.parameters.timeout,
            )
        )
        self._registry_loaded = True

    async def _load_registry(self) -> None:
        """Load the registry once per open store: a restarted server may have released it."""
        if self._registry_loaded:
            return
        await self._call(
            lambda client: client.load_collection(
                milvus_name(POINTER_REGISTRY), timeout=self.parameters.timeout
            )
        )
        self._registry_loaded = True

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        refuse_unencodable(self.store_name, records)
        for record in records:
            if len(record.document_id.encode()) > _MAX_VARCHAR:
                raise UnstorableDocumentError(
                    self.store_name,
                    f"{record.chunk.source}: its document_id is longer than Milvus's "
                    f"VARCHAR limit of {_MAX_VARCHAR} bytes",
                )
            if record.terms and len(record.terms) > _MAX_TERMS:
                raise UnstorableDocumentError(
                    self.store_name,
                    f"{record.chunk.source} chunk {record.chunk.chunk_index}: "
                    f"{len(record.terms)} distinct terms, more than Milvus's array limit of "
                    f"{_MAX_TERMS}; use smaller chunks",
                )
        # A collection with a lexical side gets every record's terms (none for
        # none): Milvus needs every field, and an upsert replaces them all.
        lexical = any(r.terms is not None for r in records) or (
            bool(records) and await self.has_lexical(collection)
        )
        write = self._insert_or_upsert if self.is_lite else self._upsert
        for batch in pages(records, self.parameters.batch_size):
            await write(collection, [_row(record, lexical) for record in batch])

    async def _insert_or_upsert(self, collection: str, rows: list[dict[str, Any]]) -> None:
        """Milvus Lite: insert the rows whose ids are not stored, upsert the others.

        Milvus Lite's upsert deletes by id first, at a cost per row that grows
        with the collection (0.3 ms at 2,000 rows, 1.9 ms at 16,000), which
        made a full run quadratic in chunks; an insert's cost stays flat
        (bench/milvus_insert.py). An insert of a stored id would add a second
        row beside the first, so the ids are looked up first: with a strong
        read, in the same turn as the writes, on a file no other process can
        serve. A run killed inside the insert leaves each id at most once; the
        next run finds that document without its chunk 0 (written last) and
        repairs it by deleting the document before writing it again.
        """
        name = milvus_name(collection)
        timeout = self.parameters.timeout

        async def write(client: Any) -> None:
            stored: set[str] = set()
            for page in pages(rows, _QUERY_PAGE):
                ids = [row["id"] for row in page]
                found = await client.query(
                    name,
                    filter=f"id in {json.dumps(ids)}",  # hex digests: nothing to escape
                    output_fields=["id"],
                    limit=len(ids),
                    timeout=timeout,
                    consistency_level="Strong",
                )
                stored.update(row["id"] for row in found)
            # The last of two rows with one id wins, as in an upsert.
            new = list({row["id"]: row for row in rows if row["id"] not in stored}.values())
            if new:
                await client.insert(name, new, timeout=timeout)
            if stored:
                await client.upsert(
                    name, [row for row in rows if row["id"] in stored], timeout=timeout
                )

        try:
            await self._call(write)
        finally:  # a failed write may have inserted some rows
            if self._clock is not None:
                self._clock.inserted(len(rows))

    async def _upsert(self, collection: str, rows: list[dict[str, Any]]) -> None:
        timeout = self.parameters.timeout
        try:
            await self._call(
                lambda client: client.upsert(milvus_name(collection), rows, timeout=timeout)
            )
        finally:  # a failed upsert may have inserted some rows
            if self._clock is not None:
                self._clock.inserted(len(rows))

    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        expression = self._expression(metadata_filter, document_id)
        timeout = self.parameters.timeout
        if not _approximate(metadata_filter):
            await self._call(
                lambda client: client.delete(
                    milvus_name(collection), filter=expression, timeout=timeout
                )
            )
            return
        rows = await self._query_all(collection, expression, ["chunk"])
        ids = [row["id"] for row in _exact(rows, metadata_filter)]
        if ids:
            await self._call(
                lambda client: client.delete(milvus_name(collection), ids=ids, timeout=timeout)
            )

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        if top_k <= 0:
            return []
        distance = self.parameters.distance
        hits = await self._best(
            collection, query_vector, "vector", _METRICS[distance], top_k, metadata_filter
        )
        results = [
            VectorSearchResult(
                score=_score(distance, float(hit["distance"])),
                document_id=hit["entity"]["document_id"],
                chunk=Chunk.model_validate(hit["entity"]["chunk"]),
            )
            for hit in hits
        ]
        results.sort(key=lambda result: result.score, reverse=True)
        return results

    async def lexical_search(
        self,
        collection: str,
        weights: dict[int, float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        if top_k <= 0 or not weights:
            return []
        hits = await self._best(collection, dict(weights), "terms", "IP", top_k, metadata_filter)
        return [
            VectorSearchResult(
                score=float(hit["distance"]),
                document_id=hit["entity"]["document_id"],
                chunk=Chunk.model_validate(hit["entity"]["chunk"]),
            )
            for hit in hits
        ]

    async def _best(
        self,
        collection: str,
        query: Any,
        field: str,
        metric: str,
        top_k: int,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Any]:
        """The ``top_k`` hits nearest ``query`` in ``field`` within the filter, as Milvus
        orders them. A filter Milvus matches only approximately is matched here too."""
        expression = self._expression(metadata_filter)
        approximate = _approximate(metadata_filter)

        def best(limit: int) -> Callable[[Any], Awaitable[Any]]:
            return lambda client: client.search(
                milvus_name(collection),
                data=[query],
                filter=expression,
                limit=limit,
                output_fields=["document_id", "chunk"],
                anns_field=field,
                search_params={"metric_type": metric},
                timeout=self.parameters.timeout,
            )

        limit = top_k
        while True:
            [hits] = await self._call(best(limit))
            found = len(hits)
            if approximate:
                hits = [hit for hit in hits if _within(hit["entity"], metadata_filter)][:top_k]
            # The filter let in near misses: ask for more until top_k remain.
            if len(hits) >= top_k or found < limit or limit >= _MAX_SEARCH_LIMIT:
                return hits
            limit = min(_MAX_SEARCH_LIMIT, limit * 4)

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        expression = self._expression(metadata_filter)
        wanted = list(dict.fromkeys(terms))
        if _approximate(metadata_filter):  # count the exact matches here
            rows = _exact(
                await self._query_all(collection, expression, ["chunk", "term_ids"]),
                metadata_filter,
            )
            held = Counter(t for row in rows for t in set(row["term_ids"] or []))
            return len(rows), {term: held[term] for term in wanted}

        async def count(clause: str) -> int:
            condition = " and ".join(c for c in (expression, clause) if c)
            rows = await self._call(
                lambda client: client.query(
                    milvus_name(collection),
                    filter=condition,
                    output_fields=["count(*)"],
                    timeout=self.parameters.timeout,
                )
            )
            return int(rows[0]["count(*)"])

        total = await count("")
        return total, {
            term: await count(f"array_contains(term_ids, {int(term)})") for term in wanted
        }

    async def _query_all(self, collection: str, expression: str, fields: list[str]) -> list[Any]:
        """Every row matching ``expression``, paged by primary key."""
        rows: list[Any] = []
        last_id: str | None = None
        while True:
            page_filter = expression
            if last_id is not None:
                after = f'id > "{last_id}"'  # ids are hex digests: nothing to escape
                page_filter = f"({expression}) and {after}" if expression else after
            page = await self._query_page(collection, page_filter, ["id", *fields])
            rows.extend(page)
            if len(page) < _QUERY_PAGE:
                return rows
            last_id = max(row["id"] for row in page)

    async def _query_page(self, collection: str, expression: str, fields: list[str]) -> list[Any]:
        timeout = self.parameters.timeout
        return await self._call(
            lambda client: client.query(
                milvus_name(collection),
                filter=expression,
                output_fields=fields,
                limit=_QUERY_PAGE,
                timeout=timeout,
                # As pymilvus's own query iterator does: the server then returns
                # the lowest ids in order, which keyset paging relies on.
                iterator="True",
                reduce_stop_for_best="True",
            )
        )

    async def list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[DocumentSummary]:
        # Every chunk's two key fields, and the chunk JSON (content and all) of
        # chunk 0s alone: a re-run's state read costs little per chunk.
        expression = self._expression(metadata_filter)
        key_fields = ["document_id", "chunk_index"]
        if _approximate(metadata_filter):  # _exact then needs the metadata
            key_fields.append("chunk")
        try:
            rows = await self._query_all(collection, expression, key_fields)
        except VectorStoreError as exc:
            raise await self._agentscope_layout(collection) or exc from exc
        keys = _exact(rows, metadata_filter)
        first = f"({expression}) and chunk_index == 0" if expression else "chunk_index == 0"
        heads = _exact(
            await self._query_all(collection, first, ["document_id", "chunk"]), metadata_filter
        )
        return await summarize_keys(
            self,
            collection,
            ((row["document_id"], row["chunk_index"]) for row in keys),
            {row["document_id"]: row["chunk"] for row in heads},
            metadata_filter,
        )

    async def _agentscope_layout(self, collection: str) -> VectorStoreError | None:
        """The error to give for a collection AgentScope's MilvusLiteStore made, whose
        fields lack the ``chunk_index`` and ``document_key`` this store lists and keys by;
        ``None`` for any other."""
        description = await self._call(
            lambda client: client.describe_collection(
                milvus_name(collection), timeout=self.parameters.timeout
            )
        )
        if any(field["name"] == "chunk_index" for field in description["fields"]):
            return None
        return VectorStoreError(
            self.store_name,
            f"collection {collection!r} has the fields of AgentScope's MilvusLiteStore (no "
            "chunk_index): this store searches it, but cannot list, adopt or update its "
            "documents; index the files into a new collection with a pipeline, or adopt "
            "AgentScope's collections from a Qdrant store",
        )

    async def _chunk_window(
        self,
        collection: str,
        document_id: str,
        window: range,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Chunk]:
        within = f"chunk_index >= {int(window.start)} and chunk_index < {int(window.stop)}"
        expression = f"{self._expression(metadata_filter, document_id)} and {within}"
        rows = _exact(await self._query_all(collection, expression, ["chunk"]), metadata_filter)
        return [Chunk.model_validate(row["chunk"]) for row in rows]

    async def document_vectors(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[tuple[Chunk, list[float]]]:
        expression = self._expression(metadata_filter, document_id)
        rows = await self._query_all(collection, expression, ["chunk", "vector"])
        return [
            (Chunk.model_validate(row["chunk"]), [float(x) for x in row["vector"]])
            for row in _exact(rows, metadata_filter)
        ]

    def _expression(
        self, metadata_filter: dict[str, Any] | None, document_id: str | None = None
    ) -> str:
        clauses = [_metadata_clause(pair) for pair in flatten_filter(metadata_filter)]
        clauses = [clause for clause in clauses if clause]
        if document_id is not None:
            clauses.insert(0, f'document_key == "{_document_key(document_id)}"')
        return " and ".join(clauses)


def milvus_name(name: str) -> str:
    """The Milvus collection that holds the collection the caller calls ``name``.

    A name Milvus accepts is used as it is. Any other (``kb-1``, ``2024``,
    ``Ärzte``) is spelled reversibly with what Milvus allows: behind the
    prefix ``_m_``, ``_`` becomes ``__`` and any other character ``_<hex code>_``
    (``kb-1`` is ``_m_kb_2d_1``). A valid name that starts with the prefix is
    spelled that way too, so two names never meet in one collection. A
    spelling past Milvus's 255 characters is cut and ends in the name's
    SHA-256. Errors and listings keep the caller's name.
    """
    if _COLLECTION_NAME.match(name) and not name.startswith(_ENCODED_PREFIX):
        return name
    spelled = _ENCODED_PREFIX + "".join(
        char if char.isascii() and char.isalnum() else "__" if char == "_" else f"_{ord(char):x}_"
        for char in name
    )
    if len(spelled) <= 255:
        return spelled
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{spelled[: 255 - 1 - len(digest)]}_{digest}"


def _row(record: VectorRecord, lexical: bool = False) -> dict[str, Any]:
    chunk = record.chunk.model_dump(mode="json")
    row: dict[str, Any] = {
        "id": record.key,
        "document_key": _document_key(record.document_id),
        "document_id": record.document_id,
        "chunk_index": record.chunk.chunk_index,
        "vector": record.vector,
        "chunk": chunk,
        "metadata": chunk["metadata"],
    }
    if lexical:
        terms = record.terms or {}
        row["terms"] = dict(terms)
        row["term_ids"] = sorted(terms)
    return row


def _document_key(document_id: str) -> str:
    return hashlib.sha256(document_id.encode()).hexdigest()


def _pointer_key(name: str) -> str:
    return hashlib.sha256(f"ragflow-pointer:{name}".encode()).hexdigest()


def _metadata_clause(pair: FilterPair) -> str:
    path, value = pair
    # Milvus decodes JSON escapes in a key, so json.dumps quotes keys exactly.
    key = "".join(f"[{json.dumps(part, ensure_ascii=False)}]" for part in path)
    if isinstance(value, str) and _has_line_break(value):
        # A string literal cannot spell a line break (measured on Milvus Lite
        # 2.5.1: a raw one is a syntax error, no escape decodes to one, and
        # filter_params templates fail the query). LIKE, with a wildcard for
        # each, narrowed a scalar, but never looks inside a list, and 2.5.1 has
        # no ``not`` nor any test that picks out lists; so this key gets no
        # native clause, and the rows are matched exactly (``_exact``).
        return ""
    # A list holding the value matches too: json_contains is true only for a
    # list (measured on 2.5.1: it keeps true apart from 1, finds no element
    # of a list inside the list, and with an integer literal misses a float
    # element, 1.0, which a float literal finds along with the integer).
    element = float(value) if _exact_float(value) else value
    return (
        f"(metadata{key} == {_literal(value)} or json_contains(metadata{key}, {_literal(element)}))"
    )


def _exact_float(value: str | int | float | bool) -> bool:
    """Whether ``value`` is an integer a float literal spells exactly."""
    return type(value) is int and abs(value) <= 2**53


def _literal(value: str | int | float | bool) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return json.dumps(value)
    # A value literal decodes only \\ and \" (measured on Milvus Lite 2.5.1:
    # "\t" stays two characters).
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _has_line_break(value: str) -> bool:
    return "\n" in value or "\r" in value


def _approximate(metadata_filter: dict[str, Any] | None) -> bool:
    """Whether the native expression of ``metadata_filter`` lets in near misses."""
    return any(
        isinstance(value, str) and _has_line_break(value)
        for _, value in flatten_filter(metadata_filter)
    )


def _exact(entities: list[Any], metadata_filter: dict[str, Any] | None) -> list[Any]:
    """The entities (with their ``chunk``) within ``metadata_filter`` exactly."""
    if not _approximate(metadata_filter):
        return entities
    return [entity for entity in entities if _within(entity, metadata_filter)]


def _within(entity: Any, metadata_filter: dict[str, Any] | None) -> bool:
    return matches_filter(entity["chunk"]["metadata"], metadata_filter)


def _score(distance: str, reported: float) -> float:
    # Milvus reports L2 as the squared distance.
    return -math.sqrt(max(reported, 0.0)) if distance == "euclidean" else reported


def _unreachable(exc: Any) -> bool:
    import grpc
    from pymilvus.client.types import Status

    return exc.code in (
        Status.CONNECT_FAILED,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    )


def _lite_in_use(path: Path) -> bool:
    """Whether another process holds Milvus Lite's lock on ``path``: an fcntl lock on
    ``.NAME.lock`` beside it, which Milvus Lite takes while serving the file.

    Not asked for a file this process serves: fcntl locks belong to a process, and
    closing any descriptor of the lock file would release the process's own lock.
    """
    with _lite_lock:
        if str(path) in _lite_users:
            return False
    try:
        descriptor = os.open(path.parent / f".{path.name}.lock", os.O_WRONLY)
    except OSError:  # no lock file: no server; one that cannot be opened is not ours to judge
        return False
    try:
        fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(descriptor)  # releases the lock, if it was taken
    return False
