"""Qdrant's client and its lifecycle: the deployment chosen, the requests retried, and a
local folder's snapshot answering for the folder until it opens (``_local_snapshot``)."""

from __future__ import annotations

import json
import logging
import math
import sqlite3
import time
from abc import abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import Field, SecretStr, model_validator

from ...._component import RELATIVE_PATH
from ...._document import DocumentSummary
from ...._errors import VectorStoreError
from ...._extras import require
from ...._redact import redact_urls
from .. import _local_snapshot
from .._in_process import off_loop
from ..base import StoreParameters, VectorStoreBase, in_use, with_retries
from ._filter import payload_filter
from ._local import local_failure, probe_folder, report_load, set_journal

if TYPE_CHECKING:
    from typing_extensions import Self

    # Imported where a server's key is read: a local store needs none.
    from ....credential import QdrantCredential

logger = logging.getLogger("ragflow_config.stores")

T = TypeVar("T")

_SCROLL_PAGE = 512
_LOCAL_SCROLL_PAGE = 8192


class QdrantConnection(VectorStoreBase):
    """A Qdrant client for one of the three deployments, opened on entering.

    ``QdrantStore`` and its parts (``_search``, ``_pointers``) share what is here.
    """

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
        local_snapshot: bool = Field(
            default=True,
            description=(
                "With `path`: keep what a run, `plan` or `verify` asked the folder (its pointer, "
                "which collections exist, each document's summary) in `ragflow-snapshot.json`, "
                "under a digest of the local engine's files. While those files hold the same "
                "bytes, the next process gets the same answers without loading every point: an "
                "unchanged re-run or a `plan` no longer opens the folder at all."
            ),
        )

        @model_validator(mode="after")
        def _one_deployment(self) -> QdrantConnection.Parameters:
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
            from ....credential import QdrantCredential

            credential = QdrantCredential(api_key=SecretStr(api_key))
        self._credential = credential
        # A local folder's snapshot (``_local_snapshot``) as the store was entered with
        # it: its digest and answers, and those answers while they are given in place
        # of the folder's (until it opens)...
        self._entered_with: tuple[str, dict[str, Any]] | None = None
        self._kept: dict[str, Any] | None = None
        # ...and the questions asked since the store was entered, each with how to
        # ask the folder again and the answer's JSON form.
        self._asked: dict[str, tuple[Callable[[], Awaitable[Any]], Callable[[Any], Any]]] = {}
        self._wrote = False
        # The collections written since, each with the scopes (``scope_key``) of its
        # records: the next run lists each under the filter it wrote with.
        self._written: dict[str, set[str]] = {}

    @property
    def store_name(self) -> str:
        p = self.parameters
        where = redact_urls(p.url or p.path or ":memory:")
        return f"QdrantStore({where})"

    async def __aenter__(self) -> Self:
        p = self.parameters
        if self._in_memory and self._client is not None:
            return self  # its collections live in this client, kept since the last block
        self._asked, self._wrote, self._written, self._entered_with = {}, False, {}, None
        if self._snapshots:
            kept = _local_snapshot.read(Path(str(p.path)))
            if kept is not None:
                # The folder opens when a question is not in the snapshot, or for a write.
                self._entered_with = kept
                self._kept = kept[1]
                return self
        self._open()
        return self

    @property
    def _snapshots(self) -> bool:
        return self.parameters.path is not None and self.parameters.local_snapshot

    @property
    def client(self) -> Any:
        if self._kept is not None:  # entered on the snapshot, not opened yet
            self._open()
        return super().client

    async def preload(self) -> None:
        # A folder entered on its snapshot opens now: loaded, and locked against writers.
        if self._kept is not None:
            self._open()

    def _open(self) -> None:
        qdrant_client = require("qdrant_client", "qdrant")
        p = self.parameters
        if p.url is not None:
            from ....credential import QdrantCredential

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
        if self._kept is not None and self._entered_with is not None:
            # Answers given from the snapshot decided what this process does next:
            # they must still be the folder's now that it holds the engine's lock.
            self._kept = None
            if _local_snapshot.folder_digest(Path(str(p.path))) != self._entered_with[0]:
                raise VectorStoreError(
                    self.store_name,
                    f"{p.path} changed while this process was reading it (another process "
                    "wrote to it); nothing was written: run again",
                )
        self._set_local_journal()
        if p.path is not None:
            report_load(self.store_name, self._client, time.perf_counter() - began)

    async def probe(self) -> str:
        p = self.parameters
        if p.url is not None:  # entering a server's store only makes a client
            async with self:
                found = await self._call(self.client.get_collections)
            return f"the server answers ({len(found.collections)} collection(s))"
        if p.path is None:
            return "in memory: nothing to open"
        return probe_folder(self.store_name, Path(p.path))

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._in_memory:
            return
        try:
            if exc_type is None and self._snapshots and self._client is not None:
                await self._keep_snapshot()
        finally:
            self._kept = None
            await self._close_client()

    async def _keep_snapshot(self) -> None:
        """Ask the folder this process's questions again, close it, and keep the
        answers as its snapshot (``_local_snapshot``), unless the snapshot it was
        entered with holds them already and nothing was written. (Should a write go
        unnoticed here, that snapshot no longer matches the files: it is not read.)"""
        entered = self._entered_with
        if entered is not None and not self._wrote and self._asked.keys() <= entered[1].keys():
            return
        answers: dict[str, Any] = {}
        try:
            for collection, scopes in self._written.items():
                if await self.has_collection(collection):
                    for scope in scopes:
                        metadata_filter = json.loads(scope) if scope else None
                        question, ask, encode, _ = self._documents_question(
                            collection, metadata_filter
                        )
                        self._asked.setdefault(_question_key(question), (ask, encode))
            # Asking again may ask more (a pointer's read asks whether its registry exists).
            while pending := [key for key in self._asked if key not in answers]:
                for key in pending:
                    ask, encode = self._asked[key]
                    answers[key] = encode(await ask())
        except VectorStoreError as exc:  # e.g. a collection deleted since it was listed
            logger.debug("%s: no snapshot kept (%s)", self.store_name, exc)
            return
        await self._close_client()
        _local_snapshot.write(Path(str(self.parameters.path)), answers, entered)

    async def _remembered(
        self,
        question: list[Any],
        ask: Callable[[], Awaitable[T]],
        encode: Callable[[T], Any] = lambda answer: answer,
        decode: Callable[[Any], T] = lambda kept: kept,
    ) -> T:
        """The answer to ``question``: from the snapshot while the folder is not open,
        else from ``ask``. Either way remembered for the snapshot kept at exit."""
        if not self._snapshots:
            return await ask()
        key = _question_key(question)
        self._asked[key] = (ask, encode)
        if self._kept is not None and key in self._kept:
            return decode(self._kept[key])
        return await ask()

    @property
    def _in_memory(self) -> bool:
        return self.parameters.url is None and self.parameters.path is None

    def _set_local_journal(self) -> None:
        """Apply ``local_write_ahead_log`` to every collection file the local engine has open."""
        if self.parameters.path is not None:
            set_journal(
                self.store_name,
                self.parameters.path,
                self._client,
                self.parameters.local_write_ahead_log,
            )

    def _local_failure(self, exc: OSError | sqlite3.Error) -> VectorStoreError:
        return local_failure(self.store_name, str(self.parameters.path), exc)

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
                return await (off_loop(operation) if local else operation())
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
        return payload_filter(
            self._models(), self.store_name, metadata_filter, document_id, chunk_indexes
        )

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

    def _documents_question(
        self, collection: str, metadata_filter: dict[str, Any] | None
    ) -> tuple[
        list[Any],
        Callable[[], Awaitable[list[DocumentSummary]]],
        Callable[[list[DocumentSummary]], Any],
        Callable[[Any], list[DocumentSummary]],
    ]:
        """``list_documents`` as a question for ``_remembered``: its key, how to ask
        the folder, and the answer's JSON form both ways."""
        return (
            ["list_documents", collection, metadata_filter],
            lambda: self._list_documents(collection, metadata_filter),
            lambda summaries: [summary.model_dump(mode="json") for summary in summaries],
            lambda kept: [DocumentSummary.model_validate(summary) for summary in kept],
        )

    @abstractmethod
    async def _list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None
    ) -> list[DocumentSummary]:
        """``list_documents``, asked of the folder or the server."""


def _question_key(question: list[Any]) -> str:
    return json.dumps(question, sort_keys=True)
