"""Milvus's client and its lifecycle: a Milvus Lite file started in this process or a
server, one request at a time on Lite, requests retried while a server is unreachable."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager, nullcontext
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import Field, field_validator

from ...._component import RELATIVE_PATH
from ...._errors import VectorStoreError
from ...._extras import require
from ...._redact import redact_urls
from ....credential import MilvusCredential
from .._lite_clock import LiteClock
from ..base import StoreParameters, VectorStoreBase, disk_failure, in_use, with_retries
from . import _lite
from ._names import milvus_name

if TYPE_CHECKING:
    from typing_extensions import Self

T = TypeVar("T")

_SERVER_SCHEMES = ("http://", "https://", "tcp://", "unix:")
# Milvus Lite's own rules for the database file name.
_LITE_FILE_NAME = re.compile(r"^[A-Za-z0-9.\-_]{1,36}$")
# A query returns at most 16384 rows; larger reads page through the primary key.
_QUERY_PAGE = 4096
MAX_VARCHAR = 65535  # bytes, Milvus's longest VARCHAR


class MilvusConnection(VectorStoreBase):
    """A Milvus client, opened on entering: ``MilvusLiteStore`` and its parts
    (``_search``, ``_pointers``) share what is here."""

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

    async def __aenter__(self) -> Self:
        pymilvus = require("pymilvus", "milvus")
        p = self.parameters
        if self.is_lite:
            require("milvus_lite", "milvus")
            path = Path(p.uri).expanduser().resolve()
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise disk_failure(self.store_name, str(path.parent), exc) from exc
            if _lite.lite_in_use(path):
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
            self._clock = _lite.use(self._lite_path)
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
        require("milvus_lite", "milvus")
        return _lite.probe_file(self.store_name, Path(p.uri).expanduser().resolve())

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
        _lite.release(path)

    def _disk_advice(self) -> str:
        return _lite.disk_advice(self._lite_path)

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

    async def _upsert(self, collection: str, rows: list[dict[str, Any]]) -> None:
        timeout = self.parameters.timeout
        try:
            await self._call(
                lambda client: client.upsert(milvus_name(collection), rows, timeout=timeout)
            )
        finally:  # a failed upsert may have inserted some rows
            if self._clock is not None:
                self._clock.inserted(len(rows))

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


def _unreachable(exc: Any) -> bool:
    import grpc
    from pymilvus.client.types import Status

    return exc.code in (
        Status.CONNECT_FAILED,
        grpc.StatusCode.UNAVAILABLE,
        grpc.StatusCode.DEADLINE_EXCEEDED,
    )
