"""Qdrant: in memory, on local disk (embedded, no server), or a remote cluster."""

from __future__ import annotations

import errno
import json
import logging
import math
import re
import sqlite3
import time
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, SecretStr, model_validator

from ..._component import RELATIVE_PATH
from ..._errors import VectorStoreError
from ..._extras import require
from ..._redact import redact_urls
from .._document import Chunk, DocumentSummary, VectorRecord, VectorSearchResult
from ._paging import pages, summarize_keys
from ._pointer import POINTER_REGISTRY, Pointer
from .base import (
    StoreParameters,
    VectorStoreBase,
    creatable,
    disk_failure,
    flatten_filter,
    in_use,
    refuse_unencodable,
    with_retries,
)

if TYPE_CHECKING:  # imported where a server's key is read: a local store needs none
    from ...credential import QdrantCredential

logger = logging.getLogger("ragflow_config.stores")

_SCROLL_PAGE = 512
_LEXICAL = "lexical"  # the sparse vector holding a record's terms
_TERMS = "terms"  # ...and the payload field listing them, which term_counts counts
_LOCAL_SCROLL_PAGE = 8192
# Opening a local folder that takes longer than this gets a warning naming the stores
# that avoid it (about 20,000 points of 384 dimensions on a 2-core machine).
_SLOW_LOCAL_OPEN_SECONDS = 1.0
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")
# SQLite's messages for the file-system failures it reports, as errnos.
_SQLITE_ERRNO = {
    "database or disk is full": errno.ENOSPC,
    "attempt to write a readonly database": errno.EROFS,
    "unable to open database file": errno.ENOENT,
    "disk I/O error": errno.EIO,
}


class QdrantStore(VectorStoreBase):
    """A Qdrant collection per knowledge base.

    Exactly one of ``location=":memory:"`` (ephemeral), ``path=`` (local disk,
    embedded) or ``url=`` (a server) chooses the deployment. An in-memory
    store keeps its collections for as long as the object lives, across
    ``async with`` blocks (AgentScope's loses them on leaving one), so code
    that indexes in one block and searches in the next works in memory too.
    ``api_key`` for a server is ``credential`` (or AgentScope's ``api_key=``),
    or else read from the variable ``api_key_env``.
    Points carry ``{"document_id", "chunk"}``; ``metadata_filter`` becomes a
    payload filter on ``chunk.metadata.<key>``.

    The lexical side (``create_lexical_collection``) is a sparse vector
    ``lexical`` beside the unnamed dense one, scored by Qdrant's inner
    product, and a payload list ``terms`` of its term ids, which
    ``term_counts`` counts: on a server with filtered ``count`` requests
    (served by a payload index), locally in one scan of the scope.
    """

    supports_lexical: ClassVar[bool] = True

    requires: ClassVar[dict[str, str]] = {"qdrant_client": "qdrant"}

    class Parameters(StoreParameters):
        location: Literal[":memory:"] | None = Field(
            default=None, description='":memory:" for an ephemeral in-process store.'
        )
        path: str | None = Field(
            default=None,
            description="Directory of an on-disk local store.",
            json_schema_extra=RELATIVE_PATH,
        )
        url: str | None = Field(default=None, description="URL of a Qdrant server.")
        api_key_env: str = Field(
            default="QDRANT_API_KEY",
            description="Environment variable holding a Qdrant server's API key, if it needs one.",
        )
        batch_size: int = Field(default=256, ge=1, description="Points per upsert request.")
        timeout: float = Field(default=30.0, gt=0, description="Seconds per server request.")
        local_write_ahead_log: bool = Field(
            default=True,
            description=(
                "With `path`: keep the local store's SQLite file in write-ahead-log mode "
                "(synchronous=NORMAL). qdrant-client commits every point on its own; this way a "
                "commit no longer waits for the disk (about 10x faster writes on a real disk). "
                "A power cut can lose the last commits, which the next run repairs. Set false "
                "for a path on a network filesystem, where SQLite's WAL does not work."
            ),
        )

        @model_validator(mode="after")
        def _one_deployment(self) -> QdrantStore.Parameters:
            chosen = [n for n in ("location", "path", "url") if getattr(self, n) is not None]
            if len(chosen) > 1:
                raise ValueError(f"give only one of location, path, url (got {', '.join(chosen)})")
            return self

    parameters: Parameters

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: QdrantCredential | None = None,
        api_key: str | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        if api_key is not None:  # AgentScope's argument
            if credential is not None:
                raise TypeError("pass either `api_key` or `credential`, not both")
            from ...credential import QdrantCredential

            credential = QdrantCredential(api_key=SecretStr(api_key))
        self._credential = credential

    @property
    def store_name(self) -> str:
        p = self.parameters
        where = redact_urls(p.url or p.path or ":memory:")
        return f"QdrantStore({where})"

    async def __aenter__(self) -> QdrantStore:
        qdrant_client = require("qdrant_client", "qdrant")
        p = self.parameters
        if self._in_memory and self._client is not None:
            return self  # its collections live in this client, kept since the last block
        if p.url is not None:
            from ...credential import QdrantCredential

            credential = self._credential or QdrantCredential.from_environment(
                {"api_key": p.api_key_env}
            )
            api_key = credential.api_key.get_secret_value() if credential.api_key else None
            kwargs: dict[str, Any] = {
                "url": p.url,
                "api_key": api_key,
                "timeout": math.ceil(p.timeout),
            }
        elif p.path is not None:
            kwargs = {"path": p.path}
        else:
            kwargs = {"location": ":memory:"}
        began = time.perf_counter()
        try:
            self._client = qdrant_client.AsyncQdrantClient(**kwargs, **self.client_kwargs)
        except (OSError, sqlite3.Error) as exc:
            raise self._local_failure(exc) from exc
        except RuntimeError as exc:  # e.g. the path is locked by another process
            if p.path is not None and "already accessed" in str(exc):
                raise in_use(self.store_name, Path(p.path)) from exc
            raise VectorStoreError(self.store_name, str(exc)) from exc
        self._set_local_journal()
        if p.path is not None:
            self._report_local_load(time.perf_counter() - began)
        return self

    def _report_local_load(self, seconds: float) -> None:
        """Say what opening a local folder cost: qdrant-client's local mode reads every
        point of every collection in it into this process, for one search as for a run."""
        collections = getattr(self._client._client, "collections", {})
        points = sum(len(getattr(collection, "ids", ())) for collection in collections.values())
        logger.info(
            "%s: loaded %d points of %d collection(s) in %.2f s",
            self.store_name,
            points,
            len(collections),
            seconds,
        )
        if seconds >= _SLOW_LOCAL_OPEN_SECONDS:
            logger.warning(
                "%s: opening it read all %d points of its %d collection(s) into memory "
                "(%.1f s): Qdrant's local mode keeps no index on disk. `ragflow-config serve` "
                "loads them once for every search; a Qdrant server (`url`), pgvector or "
                "Milvus Lite read only what a query needs",
                self.store_name,
                points,
                len(collections),
                seconds,
            )

    async def probe(self) -> str:
        p = self.parameters
        if p.url is not None:  # entering a server's store only makes a client
            async with self:
                found = await self._call(self.client.get_collections)
            return f"the server answers ({len(found.collections)} collection(s))"
        if p.path is None:
            return "in memory: nothing to open"
        # The local engine writes on opening (its folder, meta.json, .lock, the
        # journal mode): what it would read is checked here instead.
        path = Path(p.path)
        if not path.exists():
            return creatable(self.store_name, path)
        if not path.is_dir():
            raise VectorStoreError(
                self.store_name, f"{path} is a file; a local Qdrant store is a folder"
            )
        meta = path / "meta.json"
        if not meta.exists():
            return creatable(self.store_name, meta)  # an empty folder: a run makes the store
        try:
            collections = json.loads(meta.read_text(encoding="utf-8"))["collections"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise VectorStoreError(
                self.store_name, f"{meta} is not a local Qdrant store's ({exc})"
            ) from exc
        if _locked(path / ".lock"):
            raise in_use(self.store_name, path)
        return f"{path} opens ({len(collections)} collection(s)), not in use"

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._in_memory:
            await self._close_client()

    @property
    def _in_memory(self) -> bool:
        return self.parameters.url is None and self.parameters.path is None

    def _set_local_journal(self) -> None:
        """Apply ``local_write_ahead_log`` to every collection file the local engine has open.

        qdrant-client offers no setting for its SQLite files, so this reaches
        its private ``collections[...].storage.storage`` connections; a client
        laid out otherwise is left as it is (and the store's tests fail).
        """
        if self.parameters.path is None:
            return
        if self.parameters.local_write_ahead_log:
            pragmas = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL")
        else:  # the journal mode is stored in the file: undo an earlier WAL
            pragmas = ("PRAGMA journal_mode=DELETE", "PRAGMA synchronous=FULL")
        for collection in getattr(self._client._client, "collections", {}).values():
            connection = getattr(getattr(collection, "storage", None), "storage", None)
            if isinstance(connection, sqlite3.Connection):
                try:
                    for pragma in pragmas:
                        connection.execute(pragma)
                except sqlite3.Error as exc:
                    raise self._local_failure(exc) from exc

    def _local_failure(self, exc: OSError | sqlite3.Error) -> VectorStoreError:
        """The local engine's failure to write its folder or SQLite files, and what to do."""
        code = next((code for text, code in _SQLITE_ERRNO.items() if text in str(exc)), None)
        return disk_failure(self.store_name, str(self.parameters.path), exc, code)

    async def _call(self, operation: Any) -> Any:
        """Run a request; retry a server that cannot be reached, report one that refuses."""
        import httpx
        from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

        local = self.parameters.url is None
        # The local engine refuses bad input (a wrong vector length, a missing
        # collection) with ValueError; a server answers with an error status.
        refused = (ValueError, UnexpectedResponse) if local else (UnexpectedResponse,)

        # ...and cannot write its files with OSError or sqlite3.Error.
        disk = (OSError, sqlite3.Error) if local else ()

        async def attempt() -> Any:
            try:
                return await operation()
            except refused as exc:
                raise VectorStoreError(self.store_name, f"{type(exc).__name__}: {exc}") from exc
            except disk as exc:
                raise self._local_failure(exc) from exc

        return await with_retries(
            self.store_name,
            attempt,
            retry_on=(
                ResponseHandlingException,
                httpx.TransportError,
                ConnectionError,
                TimeoutError,
            ),
            attempts=1 if local else self.parameters.max_retries + 1,
        )

    def _models(self) -> Any:
        return require("qdrant_client.models", "qdrant")

    def _filter(
        self,
        metadata_filter: dict[str, Any] | None,
        document_id: str | None = None,
        chunk_indexes: range | None = None,
    ) -> Any:
        models = self._models()
        conditions = []
        if document_id is not None:
            conditions.append(
                models.FieldCondition(key="document_id", match=models.MatchValue(value=document_id))
            )
        if chunk_indexes is not None:
            conditions.append(
                models.FieldCondition(
                    key="chunk.chunk_index",
                    range=models.Range(gte=chunk_indexes.start, lt=chunk_indexes.stop),
                )
            )
        for path, value in flatten_filter(metadata_filter):
            key = "chunk.metadata." + ".".join(self._key(part) for part in path)
            # A payload list matches when an element does. A number is a range
            # (f64) so that 4 finds 4.0 too, as it does the other way; an integer
            # past 2**53 stays an exact match. Neither ever matches a boolean.
            if isinstance(value, float) or (type(value) is int and abs(value) <= 2**53):
                condition = models.FieldCondition(key=key, range=models.Range(gte=value, lte=value))
            else:
                condition = models.FieldCondition(key=key, match=models.MatchValue(value=value))
            conditions.append(condition)
        return models.Filter(must=conditions) if conditions else None

    def _key(self, key: str) -> str:
        """One step of a payload path: a key with '.', '[' or the like goes in quotes."""
        if _PLAIN_KEY.match(key):
            return key
        if '"' in key:
            raise ValueError(f"{self.store_name}: a metadata_filter key cannot contain '\"'")
        return f'"{key}"'

    async def create_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=False)

    async def create_lexical_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=True)

    async def _create(self, name: str, dimensions: int, *, lexical: bool) -> None:
        if await self.has_collection(name):
            return
        models = self._models()
        distance = {
            "cosine": models.Distance.COSINE,
            "dot": models.Distance.DOT,
            "euclidean": models.Distance.EUCLID,
        }[self.parameters.distance]
        await self._call(
            lambda: self.client.create_collection(
                collection_name=name,
                vectors_config=models.VectorParams(size=dimensions, distance=distance),
                sparse_vectors_config={_LEXICAL: models.SparseVectorParams()} if lexical else None,
            )
        )
        self._set_local_journal()
        if self.parameters.url is not None:  # local mode has no payload indexes
            await self._call(
                lambda: self.client.create_payload_index(
                    collection_name=name,
                    field_name="document_id",
                    field_schema=models.PayloadSchemaType.KEYWORD,
                )
            )
            if lexical:
                await self._call(
                    lambda: self.client.create_payload_index(
                        collection_name=name,
                        field_name=_TERMS,
                        field_schema=models.PayloadSchemaType.INTEGER,
                    )
                )

    async def delete_collection(self, name: str) -> None:
        if await self.has_collection(name):
            await self._call(lambda: self.client.delete_collection(collection_name=name))

    async def has_collection(self, name: str) -> bool:
        return bool(await self._call(lambda: self.client.collection_exists(collection_name=name)))

    async def collection_dimensions(self, name: str) -> int | None:
        if not await self.has_collection(name):
            return None
        info = await self._call(lambda: self.client.get_collection(collection_name=name))
        vectors = info.config.params.vectors
        return int(vectors.size)

    async def has_lexical(self, name: str) -> bool:
        info = await self._call(lambda: self.client.get_collection(collection_name=name))
        return _LEXICAL in (info.config.params.sparse_vectors or {})

    async def read_pointer(self, name: str) -> Pointer | None:
        if not await self.has_collection(POINTER_REGISTRY):
            return None
        found = await self._call(
            lambda: self.client.retrieve(
                collection_name=POINTER_REGISTRY, ids=[_pointer_id(name)], with_payload=True
            )
        )
        return Pointer.model_validate_json(found[0].payload["pointer"]) if found else None

    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        # One point per pointer, in a collection of its own: an upsert replaces it whole.
        models = self._models()
        if not await self.has_collection(POINTER_REGISTRY):
            await self._create(POINTER_REGISTRY, 1, lexical=False)
        point = models.PointStruct(
            id=_pointer_id(name),
            vector=[1.0],
            payload={"name": name, "pointer": pointer.model_dump_json()},
        )
        await self._call(
            lambda: self.client.upsert(collection_name=POINTER_REGISTRY, points=[point], wait=True)
        )

    async def delete_pointer(self, name: str) -> None:
        if not await self.has_collection(POINTER_REGISTRY):
            return
        models = self._models()
        await self._call(
            lambda: self.client.delete(
                collection_name=POINTER_REGISTRY,
                points_selector=models.PointIdsList(points=[_pointer_id(name)]),
                wait=True,
            )
        )

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        refuse_unencodable(self.store_name, records)
        models = self._models()
        for batch in pages(records, self.parameters.batch_size):
            # model_construct: the records are validated already, and the client checks points again.
            points = [
                models.PointStruct.model_construct(
                    id=_point_id(record),
                    vector=record.vector if record.terms is None else _vectors(models, record),
                    payload={
                        "document_id": record.document_id,
                        "chunk": record.chunk.model_dump(mode="json"),
                    }
                    if record.terms is None
                    else {
                        "document_id": record.document_id,
                        "chunk": record.chunk.model_dump(mode="json"),
                        _TERMS: sorted(record.terms),
                    },
                )
                for record in batch
            ]
            await self._call(
                lambda points=points: self.client.upsert(
                    collection_name=collection, points=points, wait=True
                )
            )

    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        models = self._models()
        selector = models.FilterSelector(filter=self._filter(metadata_filter, document_id))
        await self._call(
            lambda: self.client.delete(
                collection_name=collection, points_selector=selector, wait=True
            )
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
        sign = -1.0 if self.parameters.distance == "euclidean" else 1.0
        return await self._best(collection, query_vector, top_k, metadata_filter, sign=sign)

    async def lexical_search(
        self,
        collection: str,
        weights: dict[int, float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        if top_k <= 0 or not weights:
            return []
        models = self._models()
        terms = sorted(weights)
        query = models.SparseVector(indices=terms, values=[weights[t] for t in terms])
        return await self._best(
            collection,
            query,
            top_k,
            metadata_filter,
            using=_LEXICAL,
            payload=["document_id", "chunk"],
        )

    async def _best(
        self,
        collection: str,
        query: Any,
        top_k: int,
        metadata_filter: dict[str, Any] | None,
        *,
        using: str | None = None,
        payload: Any = True,
        sign: float = 1.0,
    ) -> list[VectorSearchResult]:
        """The ``top_k`` points nearest ``query`` in the vector ``using`` (the dense one
        if ``None``), within the filter, best first; ``sign`` turns a distance into a score."""
        query_filter = self._filter(metadata_filter)
        response = await self._call(
            lambda: self.client.query_points(
                collection_name=collection,
                query=query,
                using=using,
                limit=top_k,
                query_filter=query_filter,
                with_payload=payload,
            )
        )
        return [
            VectorSearchResult(
                score=sign * point.score,
                document_id=point.payload["document_id"],
                chunk=Chunk.model_validate(point.payload["chunk"]),
            )
            for point in response.points
        ]

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        models = self._models()
        scope = self._filter(metadata_filter)
        if self.parameters.url is None:
            # The local engine filters in Python, a scan per count: one scan
            # reading every term list in scope costs less than one count.
            wanted = set(terms)
            total, held = 0, dict.fromkeys(terms, 0)
            async for point in self._scroll(collection, scope, [_TERMS]):
                total += 1
                for term in wanted.intersection((point.payload or {}).get(_TERMS) or ()):
                    held[term] += 1
            return total, held
        conditions = list(scope.must) if scope is not None else []

        async def count(term: int | None) -> int:
            must = conditions
            if term is not None:
                match = models.MatchValue(value=term)
                must = [*conditions, models.FieldCondition(key=_TERMS, match=match)]
            flt = models.Filter(must=must) if must else None
            result = await self._call(
                lambda: self.client.count(collection_name=collection, count_filter=flt, exact=True)
            )
            return int(result.count)

        total = await count(None)
        return total, {term: await count(term) for term in dict.fromkeys(terms)}

    async def _scroll(
        self,
        collection: str,
        scroll_filter: Any,
        with_payload: Any = True,
        with_vectors: bool = False,
    ) -> AsyncIterator[Any]:
        # Local mode sorts every id on each page, so it pays to ask for large pages.
        size = _SCROLL_PAGE if self.parameters.url is not None else _LOCAL_SCROLL_PAGE
        offset = None
        while True:
            page, offset = await self._call(
                lambda offset=offset: self.client.scroll(
                    collection_name=collection,
                    scroll_filter=scroll_filter,
                    limit=size,
                    offset=offset,
                    with_payload=with_payload,
                    with_vectors=with_vectors,
                )
            )
            for point in page:
                yield point
            if offset is None:
                return

    async def list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[DocumentSummary]:
        # Every chunk's two key fields, then chunk 0s alone, by id: a re-run's
        # state read copies little per chunk, and local mode (which scans
        # every point in Python for a filtered scroll) scans once. It still
        # holds every point in memory: see docs/concepts.md, "What `plan` and
        # `verify` read, and parse timeouts".
        models = self._models()
        keys: list[tuple[str, int]] = []
        first_ids = []
        async for point in self._scroll(
            collection,
            self._filter(metadata_filter),
            models.PayloadSelectorInclude(include=["document_id", "chunk.chunk_index"]),
        ):
            keys.append((point.payload["document_id"], point.payload["chunk"]["chunk_index"]))
            if keys[-1][1] == 0:
                first_ids.append(point.id)
        without_content = models.PayloadSelectorExclude(exclude=["chunk.content", _TERMS])
        heads: dict[str, dict[str, Any]] = {}
        for ids in pages(first_ids, _SCROLL_PAGE):
            points = await self._call(
                lambda ids=ids: self.client.retrieve(
                    collection, ids=ids, with_payload=without_content, with_vectors=False
                )
            )
            heads.update((point.payload["document_id"], point.payload["chunk"]) for point in points)
        return await summarize_keys(self, collection, keys, heads, metadata_filter)

    async def _chunk_window(
        self,
        collection: str,
        document_id: str,
        window: range,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Chunk]:
        scroll_filter = self._filter(metadata_filter, document_id, window)
        return [
            Chunk.model_validate(point.payload["chunk"])
            async for point in self._scroll(collection, scroll_filter)
        ]

    async def document_vectors(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[tuple[Chunk, list[float]]]:
        scroll_filter = self._filter(metadata_filter, document_id)
        return [
            # A lexical collection names its vectors; the dense one is unnamed.
            (
                Chunk.model_validate(point.payload["chunk"]),
                point.vector[""] if isinstance(point.vector, dict) else point.vector,
            )
            async for point in self._scroll(collection, scroll_filter, with_vectors=True)
        ]


def _vectors(models: Any, record: VectorRecord) -> dict[str, Any]:
    """The dense vector, unnamed, and the record's terms as the sparse vector ``lexical``."""
    terms = record.terms or {}
    if not terms:
        return {"": record.vector}
    indices = sorted(terms)
    sparse = models.SparseVector(indices=indices, values=[terms[t] for t in indices])
    return {"": record.vector, _LEXICAL: sparse}


def _point_id(record: VectorRecord) -> str:
    return str(uuid.UUID(record.key[:32]))


def _pointer_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragflow-pointer:{name}"))


def _locked(lock: Path) -> bool:
    """Whether another client holds the local engine's lock file (an exclusive flock,
    taken by portalocker as the engine does). Opened without creating or truncating it."""
    if not lock.exists():
        return False
    import portalocker

    with lock.open("r+") as file:
        try:
            portalocker.lock(
                file, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            )
        except portalocker.exceptions.LockException:
            return True
        portalocker.unlock(file)
    return False
