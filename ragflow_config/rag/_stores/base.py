"""The vector store interface and the helpers every store shares."""

from __future__ import annotations

import asyncio
import errno
import logging
import math
import os
import random
import tempfile
from abc import abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from types import TracebackType
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field, field_validator

from ..._component import Component, ComponentParameters
from ..._document import Chunk, DocumentSummary, VectorRecord, VectorSearchResult
from ..._errors import UnstorableDocumentError, VectorStoreError
from ..._foreign import refuse_agentscope
from ._pointer import Pointer

logger = logging.getLogger("ragflow_config.stores")

T = TypeVar("T")

Scalar = str | int | float | bool
FilterPair = tuple[tuple[str, ...], Scalar]


class StoreParameters(ComponentParameters):
    """Options every vector store has."""

    distance: Literal["cosine", "dot", "euclidean"] = Field(
        default="cosine",
        description="Similarity metric of new collections. Scores are on one scale on every "
        "store: cosine similarity, the inner product, or the negated euclidean distance.",
    )
    max_retries: int = Field(
        default=3,
        ge=0,
        le=10,
        description="Retries, with backoff, of an idempotent call that could not reach the server.",
    )

    @field_validator("distance", mode="before")
    @classmethod
    def _backend_spelling(cls, value: Any) -> Any:
        # AgentScope's stores take each backend's own spelling: Qdrant's "Cosine" and
        # "Euclid", Milvus' "COSINE", "IP" and "L2", MongoDB's "dotProduct".
        if isinstance(value, str):
            lowered = value.lower()
            return _DISTANCE_SPELLINGS.get(lowered, lowered)
        return value


_DISTANCE_SPELLINGS = {"euclid": "euclidean", "l2": "euclidean", "ip": "dot", "dotproduct": "dot"}


class VectorStoreBase(Component):
    """Stores chunk vectors with their metadata and searches them.

    Enter the store with ``async with`` before use; leaving it closes the
    connection, and a store can be entered again. Scores are always
    higher-is-better and on one scale per metric across every store: cosine
    similarity for ``cosine``, the inner product for ``dot``, the negated
    distance for ``euclidean``.

    ``metadata_filter`` is an AND of ``chunk.metadata[key] == value``; a dict
    value nests (``{"org": {"team": "a"}}`` matches ``metadata["org"]["team"]``).
    Every store translates it into a native filter. Where the metadata holds
    a list, the filter value matches when the list contains it:
    ``{"sheets": "Q1"}`` matches ``{"sheets": ["Q1", "Q2"]}`` (the Excel and
    PDF parsers emit such lists). That is what a scalar filter means on an
    array in Qdrant, Elasticsearch and MongoDB, so users of those engines
    expect it, and it is what a scope over multi-valued metadata needs (no
    filter value can be a list, so whole-list equality is never asked for).
    An element matches as a scalar does (``True`` never matches ``1``); a
    list inside the list is not searched; a path is followed through
    mappings only, so what a filter matches through a list of mappings
    (``{"a": [{"b": 1}]}``) is no part of the contract.

    Content is stored faithfully or not at all. Every store keeps any string
    a ``str`` can hold and UTF-8 can encode, NUL, line breaks, quotes and
    backslashes included, and finds it again with ``metadata_filter``; where
    the engine cannot hold a character (PostgreSQL text and U+0000), the
    store spells it reversibly. A string with a lone surrogate (U+D800 to
    U+DFFF, left by decoding bytes with ``errors="surrogateescape"``) is
    not Unicode text that any engine can encode, so every store refuses the
    document with :class:`UnstorableDocumentError` before writing any of it,
    as it does a record past one of the engine's size limits. An engine's
    own failures (a full disk, a read-only path, a lost connection) surface
    as :class:`VectorStoreError` saying what to do.
    """

    def __init__(
        self,
        parameters: ComponentParameters | None = None,
        *,
        client_kwargs: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        # AgentScope's argument: passed as they are to the backend's client when the store
        # opens (TLS options, a proxy); not part of the pipeline file, as they may hold objects.
        self.client_kwargs = dict(client_kwargs or {})
        self._client: Any = None

    async def __aenter__(self: T) -> T:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    @abstractmethod
    async def create_collection(self, name: str, dimensions: int) -> None:
        """Create ``name`` for vectors of ``dimensions``; a no-op if it exists."""

    @abstractmethod
    async def delete_collection(self, name: str) -> None:
        """Drop ``name`` and everything in it; a no-op if it does not exist."""

    @abstractmethod
    async def has_collection(self, name: str) -> bool:
        """Whether ``name`` exists."""

    @abstractmethod
    async def collection_dimensions(self, name: str) -> int | None:
        """The vector length ``name`` was created for, or ``None`` if it does not exist."""

    @abstractmethod
    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        """Upsert ``records``; a record's id derives from ``(document_id, chunk_index)``."""

    @abstractmethod
    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        """Remove every record of ``document_id`` that matches ``metadata_filter``."""

    @abstractmethod
    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        """The ``top_k`` best matches within the filter, best first."""

    @abstractmethod
    async def list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[DocumentSummary]:
        """One summary per document within the filter, in no particular order."""

    async def list_chunks(
        self,
        collection: str,
        document_id: str,
        *,
        offset: int = 0,
        limit: int = 30,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[Chunk]:
        """Chunks ``[offset, offset + limit)`` of a document, by ``chunk_index``.

        A store reads the window with ``_chunk_window``; the paging is the same for all.
        """
        if limit <= 0:
            return []
        window = range(offset, offset + limit)
        chunks = await self._chunk_window(collection, document_id, window, metadata_filter)
        return sorted(chunks, key=lambda chunk: chunk.chunk_index)

    async def _chunk_window(
        self,
        collection: str,
        document_id: str,
        window: range,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Chunk]:
        """The chunks of ``document_id`` within ``metadata_filter`` whose ``chunk_index``
        is in ``window`` (not empty), in any order."""
        raise NotImplementedError(f"{type(self).__name__} does not list chunks")

    @abstractmethod
    async def document_vectors(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[tuple[Chunk, list[float]]]:
        """Every chunk of ``document_id`` that matches ``metadata_filter``, with its stored
        vector, in no particular order: what an update can reuse instead of embedding again."""

    # Pointers (``_pointer``): which collection a knowledge base reads, switched atomically.

    @abstractmethod
    async def read_pointer(self, name: str) -> Pointer | None:
        """The pointer ``name``, or ``None`` if there is none (nor any registry: a read creates nothing)."""

    @abstractmethod
    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        """Replace the pointer ``name`` whole, in one atomic write (creating the registry
        on first use): a concurrent ``read_pointer`` sees the old record or this one."""

    @abstractmethod
    async def delete_pointer(self, name: str) -> None:
        """Remove the pointer ``name``; a no-op if there is none."""

    @property
    def store_name(self) -> str:
        """How errors name this store."""
        return type(self).__name__

    @property
    def client(self) -> Any:
        """The backend's own client, while the store is entered."""
        if self._client is None:
            raise VectorStoreError(self.store_name, "not open; use `async with store:` first")
        return self._client

    def get_client(self) -> Any:
        """``client``, under AgentScope's name."""
        return self.client

    async def _close_client(self) -> None:
        """Close the backend's client, if open; the store can be entered again."""
        if self._client is not None:
            client, self._client = self._client, None
            await client.close()

    async def preload(self) -> None:
        """Do now what the store would do at its first request: a server calls it once
        built, so that it holds what it serves and its first query pays for nothing more.
        Most stores connect when entered and have nothing to do."""

    async def settle(self) -> None:
        """Do now what the store does for what this process wrote when it closes: a server
        calls it after each refresh, since it never closes. Most stores index as they write
        and have nothing to do."""

    async def probe(self) -> str:
        """Whether the store can be used, found out without writing anything, on a store
        that is not entered: its server answers, or its local file or folder can be opened
        (or created by a run). What `validate --check-env` reports.

        Returns what was found, in a few words; raises :class:`VectorStoreError` (or
        ``MissingSecretError``) saying what is wrong and what to do. A store whose
        opening writes (creating a folder, a table, an extension) checks what it can
        without opening. A plugin store that does not override this is reported as
        not checked.
        """
        raise NotImplementedError(f"{self.store_name} has no check that writes nothing")

    # The lexical side (see ``rag/_retrieval``). A store that can hold sparse
    # vectors beside dense ones sets ``supports_lexical`` and overrides these.
    supports_lexical: ClassVar[bool] = False

    async def create_lexical_collection(self, name: str, dimensions: int) -> None:
        """Create ``name`` for vectors of ``dimensions`` and each record's ``terms``."""
        raise NotImplementedError(f"{self.store_name} has no lexical side")

    async def has_lexical(self, name: str) -> bool:
        """Whether ``name`` (which exists) was created with a lexical side."""
        return False

    async def lexical_search(
        self,
        collection: str,
        weights: dict[int, float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        """The ``top_k`` records within the filter by the inner product of their ``terms``
        with ``weights``, best first; a record sharing no term with ``weights`` is no hit."""
        raise NotImplementedError(f"{self.store_name} has no lexical side")

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        """``(records within the filter, {term: such records whose terms hold it})``."""
        raise NotImplementedError(f"{self.store_name} has no lexical side")


def refuse_unencodable(store: str, records: Iterable[VectorRecord]) -> None:
    """Refuse, before any write, a record holding a string UTF-8 cannot encode.

    Only a lone surrogate makes a ``str`` unencodable; no engine can store one.
    AgentScope's records are refused too: they come from AgentScope's KnowledgeBase,
    which would get this store's results, ours, and fail on them.
    """
    for record in records:
        refuse_agentscope(
            record,
            f"{store}.insert",
            "a ragflow_config store cannot serve agentscope's KnowledgeBase, which would get "
            f"ragflow_config's results from it; give it agentscope's {store.partition('(')[0]}, "
            "or use ragflow_config.rag.KnowledgeBase with this store",
        )
        chunk = record.chunk
        for where, value in (
            ("document_id", record.document_id),
            ("source", chunk.source),
            ("content", chunk.content.model_dump()),
            ("metadata", chunk.metadata),
        ):
            bad = _unencodable(value)
            if bad is not None:
                raise UnstorableDocumentError(
                    store,
                    f"{chunk.source} chunk {chunk.chunk_index}: its {where} holds the lone "
                    f"surrogate {bad!r}, which is not Unicode text and no store can encode; "
                    "decode the file without errors='surrogateescape'",
                )


def _unencodable(value: Any) -> str | None:
    """The first lone surrogate in a string, or in the keys and values of a structure."""
    if isinstance(value, str):
        if value.isascii():
            return None
        try:
            value.encode()
        except UnicodeEncodeError as exc:
            return value[exc.start]
        return None
    if isinstance(value, dict):
        for key, inner in value.items():
            bad = _unencodable(key)
            if bad is None:
                bad = _unencodable(inner)
            if bad is not None:
                return bad
    elif isinstance(value, (list, tuple)):
        for inner in value:
            bad = _unencodable(inner)
            if bad is not None:
                return bad
    return None


# What to do about a file-system failure of a local store, by errno.
_DISK_ADVICE = {
    errno.ENOSPC: "the disk is full: free space there and run again",
    errno.EDQUOT: "the disk quota is exhausted: free space there and run again",
    errno.EROFS: "it is read-only: check its permissions and that its file system is "
    "mounted writable, or choose another path",
    errno.EACCES: "permission denied: check the permissions on it",
    errno.EPERM: "permission denied: check the permissions on it",
    errno.ENOTDIR: "a part of the path is a file, not a folder: move it or choose another path",
    errno.EEXIST: "a part of the path is a file, not a folder: move it or choose another path",
    errno.ENOENT: "a folder on the path is missing: check that it exists and is writable",
    errno.EIO: "the disk reported an I/O error: check the disk",
}


def disk_failure(
    store: str, path: str, exc: Exception, code: int | None = None
) -> VectorStoreError:
    """A local store's file-system failure at ``path`` as an error saying what to do.

    ``code`` is the errno the failure amounts to, when ``exc`` (a database
    engine's error, say) carries none of its own.
    """
    if code is None and isinstance(exc, OSError):
        code = exc.errno
    if code != errno.ENOSPC and _mounted_read_only(path):
        code = errno.EROFS  # SQLite, say, reports it only as "unable to open database file"
    advice = _DISK_ADVICE.get(code or 0, "check that it can be written")
    cause = " ".join(str(exc).split())
    return VectorStoreError(store, f"cannot write {path}: {advice} ({type(exc).__name__}: {cause})")


def in_use(store: str, path: Path) -> VectorStoreError:
    """A local store's file or folder that another process has open: it serves one process
    at a time, and what usually holds it is a running server."""
    return VectorStoreError(
        store,
        f"{path} is open in another process, such as a running `ragflow-config serve`. A "
        "server indexes in its own process: `curl -X POST <server>/v1/knowledge-bases/<name>"
        "/refresh` (or the refresh_knowledge_base MCP tool) runs the pipeline there now, and "
        "`serve --refresh-every 5m` or `--watch` keeps it fresh. Otherwise stop it, or point "
        "this command at another path (a store on a server serves many processes)",
    )


def creatable(store: str, path: Path) -> str:
    """What a run would do with a local store's ``path`` that does not exist yet: create it,
    in its nearest existing folder, which must be a writable folder. Leaves nothing: a file
    is written there and removed, since permission bits and mount flags do not tell (root
    passes every access check, and `/proc` is mounted writable but takes no new file)."""
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise VectorStoreError(
            store, f"cannot create {path}: {folder} is a file, not a folder; choose another path"
        )
    try:
        handle, written = tempfile.mkstemp(prefix=".ragflow-write-check-", dir=folder)
    except OSError as exc:
        raise VectorStoreError(
            store,
            f"cannot create {path}: {folder} is not writable ({exc.strerror or exc}); check "
            "its permissions, or choose another path",
        ) from None
    os.close(handle)
    os.unlink(written)
    return f"{path} does not exist yet; `run` creates it"


def _mounted_read_only(path: str) -> bool:
    """Whether the file system holding ``path`` (or its nearest existing parent) is read-only."""
    folder = Path(path)
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def flatten_filter(metadata_filter: dict[str, Any] | None) -> list[FilterPair]:
    """``{"a": {"b": 1}, "c": "x"}`` -> ``[(("a", "b"), 1), (("c",), "x")]``.

    Values must be strings, integers, booleans or finite floats.
    """
    pairs: list[FilterPair] = []

    def walk(prefix: tuple[str, ...], value: Any) -> None:
        if isinstance(value, dict):
            if not value:
                raise ValueError(f"metadata_filter: empty mapping at {'.'.join(prefix)!r}")
            for key, inner in value.items():
                if not isinstance(key, str) or not key:
                    raise ValueError(
                        f"metadata_filter: keys must be non-empty strings, got {key!r}"
                    )
                walk((*prefix, key), inner)
            return
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"metadata_filter: {'.'.join(prefix)} is not a finite number")
        if not isinstance(value, (str, int, float, bool)):
            raise ValueError(
                f"metadata_filter: {'.'.join(prefix)} must be a string, number or boolean, "
                f"not {type(value).__name__}"
            )
        pairs.append((prefix, value))

    if metadata_filter:
        walk((), metadata_filter)
    return pairs


def matches_filter(metadata: dict[str, Any], metadata_filter: dict[str, Any] | None) -> bool:
    """Whether ``metadata`` lies within ``metadata_filter`` (the reference semantics)."""
    for path, expected in flatten_filter(metadata_filter):
        value: Any = metadata
        for key in path:
            if not isinstance(value, dict) or key not in value:
                return False
            value = value[key]
        candidates = value if isinstance(value, list) else [value]  # a list: any element
        # True == 1 in Python, but a boolean filter must not match a number.
        if not any(
            candidate == expected and isinstance(candidate, bool) == isinstance(expected, bool)
            for candidate in candidates
        ):
            return False
    return True


async def with_retries(
    store: str,
    operation: Callable[[], Awaitable[T]],
    *,
    retry_on: tuple[type[BaseException], ...],
    attempts: int = 4,
    base_delay: float = 0.2,
    max_delay: float = 5.0,
) -> T:
    """Run an idempotent ``operation``, retrying ``retry_on`` errors with jittered backoff.

    The last failure surfaces as :class:`VectorStoreError` naming the store.
    """
    for attempt in range(1, attempts + 1):
        try:
            return await operation()
        except retry_on as exc:
            if attempt == attempts:
                message = " ".join(str(exc).split())  # one line: the CLI prints it as one
                raise VectorStoreError(
                    store, f"{type(exc).__name__}: {message} (gave up after {attempts} attempts)"
                ) from exc
            delay = min(max_delay, base_delay * 2 ** (attempt - 1)) * (0.5 + random.random())
            logger.warning(
                "%s: %s, retrying in %.1fs (attempt %d of %d)",
                store,
                type(exc).__name__,
                delay,
                attempt,
                attempts,
            )
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")
