"""MongoDB's client and its lifecycle: the connection string from the environment, never
quoted, and requests retried while the cluster cannot be reached."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import Field, SecretStr, field_validator

from ...._errors import VectorStoreError
from ...._extras import require
from ....credential import MongoDBCredential
from ..base import StoreParameters, VectorStoreBase, with_retries
from ._filter import METADATA, metadata_key_problem

if TYPE_CHECKING:
    from typing_extensions import Self

T = TypeVar("T")


class MongoConnection(VectorStoreBase):
    """A MongoDB client, made on entering: ``MongoDBStore`` and its parts (``_index``,
    ``_search``, ``_pointers``) share what is here."""

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
            keys = [field.removeprefix(METADATA) for field in fields]
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

    async def __aenter__(self) -> Self:
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


def collection_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a MongoDB collection name, or ``None`` if it can."""
    if not name:
        return "it is empty"
    if "$" in name or "\0" in name:
        return "it must not contain '$' or a NUL character"
    if name.startswith("system."):
        return "names starting with 'system.' are reserved"
    return None


def _describe(exc: Any) -> str:
    code = getattr(exc, "code", None)
    return f"{type(exc).__name__}{f' (code {code})' if code is not None else ''}: {exc}"


def _hosts(uri: str) -> str:
    """The host list of a connection string, without scheme, credentials or options."""
    rest = uri.partition("://")[2] or uri
    authority = rest.split("/", 1)[0].split("?", 1)[0]
    return authority.rpartition("@")[2]
