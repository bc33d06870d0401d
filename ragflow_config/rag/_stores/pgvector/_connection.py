"""PostgreSQL's connection and its lifecycle: one connection, one statement at a time,
reopened when it breaks, with pgvector's extension made and its types registered."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import Field

from ...._errors import VectorStoreError
from ...._extras import require
from ....credential import PostgresCredential
from ..base import StoreParameters, VectorStoreBase, with_retries
from ._diagnostics import explain, retryable

if TYPE_CHECKING:
    from typing_extensions import Self

T = TypeVar("T")

_MAX_IDENTIFIER_BYTES = 63  # PostgreSQL silently truncates longer names
MAX_EF_SEARCH = 1000


class PgConnection(VectorStoreBase):
    """A PostgreSQL connection, checked on entering: ``PgVectorStore`` and its parts
    (``_search``, ``_pointers``) share what is here."""

    class Parameters(StoreParameters):
        dsn_env: str = Field(
            default="PGVECTOR_DSN",
            description="Environment variable holding the connection string "
            "(postgresql://user:password@host:5432/database).",
        )
        batch_size: int = Field(default=256, ge=1, description="Rows per insert round trip.")
        timeout: float = Field(
            default=30.0, gt=0, description="Seconds to connect, and per statement."
        )
        ef_search: int = Field(
            default=200,
            ge=1,
            le=MAX_EF_SEARCH,
            description="Candidates an HNSW search keeps (hnsw.ef_search, at least top_k); a "
            "search also collects this many rows that pass its metadata_filter before keeping "
            "the best top_k. Higher finds more of the exact nearest neighbours, at more time per "
            "search; pgvector's own default is 40.",
        )
        iterative_scan: Literal["relaxed_order", "strict_order", "off"] = Field(
            default="relaxed_order",
            description="When a metadata_filter drops candidates, keep scanning the index "
            "(hnsw.iterative_scan, pgvector 0.8 or later). relaxed_order finds more; its "
            "rows are re-sorted exactly here.",
        )
        max_scan_tuples: int = Field(
            default=20_000,
            ge=1,
            description="Index entries an iterative scan visits at most (hnsw.max_scan_tuples). "
            "A search that finds fewer than top_k rows within it is answered exactly instead.",
        )
        exact: bool = Field(
            default=False,
            description="Search without the HNSW index: compare the query with every row the "
            "filter lets through. Always the exact answer; time grows with the table.",
        )

    parameters: Parameters

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: PostgresCredential | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        self._credential = credential
        self._dsn: str | None = None
        self._where = f"${self.parameters.dsn_env}"
        self._connection: Any = None
        self._lock: asyncio.Lock | None = None
        self._iterative_scan = False
        self._scoped_tables: set[str] = set()
        self._lexical_tables: dict[str, bool] = {}

    @property
    def store_name(self) -> str:
        return f"PgVectorStore({self._where})"

    async def __aenter__(self) -> Self:
        require("pgvector.psycopg", "pgvector")
        self._dsn = self._read_dsn()
        self._lock = asyncio.Lock()  # made here: a lock belongs to one event loop
        try:
            await self._run(lambda connection: connection.execute("SELECT 1"))
        except BaseException:
            self._dsn = self._lock = None
            raise
        return self

    def _read_dsn(self) -> str:
        """The connection string, checked; the store is named by its host from then on."""
        psycopg = require("psycopg", "pgvector")
        credential = self._credential or PostgresCredential.from_environment(
            {"dsn": self.parameters.dsn_env}
        )
        dsn = credential.dsn.get_secret_value()
        try:
            info = psycopg.conninfo.conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as exc:
            # The message would quote the DSN, password included.
            raise VectorStoreError(self.store_name, "the connection string is invalid") from exc
        self._where = f"{info.get('host') or 'localhost'}:{info.get('port') or 5432}/" + str(
            info.get("dbname") or info.get("user") or ""
        )
        return dsn

    async def probe(self) -> str:
        # Not entered: a first connection creates the vector extension.
        psycopg = require("psycopg", "pgvector")
        dsn = self._read_dsn()
        try:
            connection = await psycopg.AsyncConnection.connect(
                dsn,
                autocommit=True,
                connect_timeout=max(2, round(self.parameters.timeout)),
                application_name="ragflow-config",
            )
            async with connection:
                cursor = await connection.execute(
                    "SELECT (SELECT extversion FROM pg_extension WHERE extname = 'vector'),"
                    " (SELECT default_version FROM pg_available_extensions WHERE name = 'vector')"
                )
                installed, available = await cursor.fetchone() or (None, None)
        except psycopg.Error as exc:
            raise VectorStoreError(self.store_name, explain(exc)) from exc
        if installed:
            return f"the server answers (pgvector {installed})"
        if available:
            return (
                f"the server answers (pgvector {available} is available; `run` creates the "
                "extension, which needs the right to CREATE EXTENSION in the database)"
            )
        raise VectorStoreError(
            self.store_name,
            "the server answers but has no pgvector extension: install pgvector on the server",
        )

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._dsn = self._lock = None
        if self._connection is not None:
            connection, self._connection = self._connection, None
            await connection.close()

    async def _connect(self) -> Any:
        """The open connection, (re)connecting with pgvector's types registered."""
        if self._connection is not None:
            if not self._connection.closed:
                return self._connection
            self._connection = None  # broken: the server closed it, or the network failed
        psycopg = require("psycopg", "pgvector")
        from pgvector.psycopg import register_vector_async

        connection = await psycopg.AsyncConnection.connect(
            str(self._dsn),
            autocommit=True,
            connect_timeout=max(2, round(self.parameters.timeout)),
            application_name="ragflow-config",
        )
        try:
            await connection.execute(
                "SELECT set_config('statement_timeout', %s, false)",
                (f"{round(self.parameters.timeout * 1000)}ms",),
            )
            async with connection.transaction():
                # Serialises concurrent first connections racing to create it.
                await connection.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended('ragflow_config:vector', 0))"
                )
                await connection.execute("CREATE EXTENSION IF NOT EXISTS vector")
            cursor = await connection.execute(
                "SELECT extversion FROM pg_extension WHERE extname = 'vector'"
            )
            (version,) = await cursor.fetchone()
            self._iterative_scan = _version(version) >= (0, 8)
            await register_vector_async(connection)
        except BaseException:
            await connection.close()
            raise
        self._connection = connection
        return connection

    async def _run(self, work: Callable[[Any], Awaitable[T]]) -> T:
        """Run idempotent ``work`` on the connection, retrying connection errors."""
        psycopg = require("psycopg", "pgvector")

        async def attempt() -> T:
            if self._dsn is None or self._lock is None:
                raise VectorStoreError(self.store_name, "not open; use `async with store:` first")
            async with self._lock:
                try:
                    return await work(await self._connect())
                except psycopg.Error as exc:
                    if isinstance(exc, psycopg.OperationalError) and retryable(exc):
                        raise
                    raise VectorStoreError(self.store_name, explain(exc)) from exc

        return await with_retries(
            self.store_name,
            attempt,
            retry_on=(psycopg.OperationalError,),
            attempts=self.parameters.max_retries + 1,
        )

    async def _rows(self, statement: Any, params: dict[str, Any]) -> list[Any]:
        """Every row ``statement`` selects, run as ``_run`` runs work."""

        async def run(connection: Any) -> list[Any]:
            cursor = await connection.execute(statement, params)
            return list(await cursor.fetchall())

        return await self._run(run)

    def _table(self, name: str) -> Any:
        from psycopg import sql

        if not name or "\0" in name or len(name.encode()) > _MAX_IDENTIFIER_BYTES:
            raise VectorStoreError(
                self.store_name,
                f"invalid collection name {name!r}: 1 to {_MAX_IDENTIFIER_BYTES} bytes, no NUL",
            )
        return sql.Identifier(name)


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())
