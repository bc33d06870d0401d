"""PostgreSQL with pgvector: one table per knowledge base."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from types import TracebackType
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import Field

from ..._document import Chunk, DocumentSummary, VectorRecord, VectorSearchResult
from ..._errors import UnstorableDocumentError, VectorStoreError
from ..._extras import require
from ...credential import PostgresCredential
from .._analyzer import TERM_SPACE
from ._paging import pages
from ._pg_text import from_postgres, to_postgres
from ._pointer import POINTER_REGISTRY, Pointer
from .base import (
    StoreParameters,
    VectorStoreBase,
    flatten_filter,
    refuse_unencodable,
    with_retries,
)

T = TypeVar("T")

# distance -> (operator, operator class, score as SQL over the operator's value)
_METRICS = {
    "cosine": ("<=>", "vector_cosine_ops", "1 - ({})"),
    "dot": ("<#>", "vector_ip_ops", "-({})"),
    "euclidean": ("<->", "vector_l2_ops", "-({})"),
}
_MAX_IDENTIFIER_BYTES = 63  # PostgreSQL silently truncates longer names
_MAX_EF_SEARCH = 1000
# A search under these compares every row its filter lets through (which the
# GIN index may narrow), whatever plans the session or server prefers.
_EXACT_SCAN = {"enable_indexscan": "off", "enable_seqscan": "on", "enable_bitmapscan": "on"}


class PgVectorStore(VectorStoreBase):
    """A PostgreSQL table per knowledge base, searched through an HNSW index.

    Columns: ``document_id``, ``chunk_index`` and ``scope`` (the primary key:
    see ``VectorRecord.scope``), ``embedding vector(n)``, ``chunk jsonb`` and
    ``metadata jsonb`` under a GIN index;
    ``metadata_filter`` is JSON containment, which nests naturally. The DSN is
    ``credential``, or else read from the variable ``dsn_env``.

    The store holds one connection and runs one statement at a time on it
    (an ``asyncio.Lock``): each call is a few milliseconds of database work,
    so a pool would add a dependency and more server connections for little
    gain, and a single connection makes every call's transaction explicit.
    A broken connection is reopened on the next attempt.

    The lexical side (``create_lexical_collection``) adds two columns: ``terms
    sparsevec``, scored by pgvector's exact inner product, and ``term_ids
    integer[]`` under a GIN index, which picks the rows sharing a query term
    and which ``term_counts`` counts.
    """

    requires: ClassVar[dict[str, str]] = {"psycopg": "pgvector", "pgvector": "pgvector"}
    supports_lexical: ClassVar[bool] = True

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
            le=_MAX_EF_SEARCH,
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

    async def __aenter__(self) -> PgVectorStore:
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
            raise VectorStoreError(self.store_name, _explain(exc)) from exc
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
                    if isinstance(exc, psycopg.OperationalError) and _retryable(exc):
                        raise
                    raise VectorStoreError(self.store_name, _explain(exc)) from exc

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

    async def _key_by_scope(self, connection: Any, name: str) -> None:
        """Give a table made before records were keyed by scope its ``scope`` column.

        Such a table's key is ``(document_id, chunk_index)``, under which one
        scope's insert would replace another's record. Checked once per table.
        """
        if name in self._scoped_tables:
            return
        from psycopg import sql

        table = self._table(name)
        async with connection.transaction():
            await connection.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                (f"ragflow_config:table:{name}",),
            )
            cursor = await connection.execute(
                "SELECT conname, EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = conrelid"
                "  AND attname = 'scope' AND NOT attisdropped)"
                " FROM pg_constraint WHERE conrelid = to_regclass(%s) AND contype = 'p'",
                (table.as_string(connection),),
            )
            row = await cursor.fetchone()
            if row is not None and not row[1]:
                await connection.execute(
                    sql.SQL(
                        "ALTER TABLE {} ADD COLUMN scope text NOT NULL DEFAULT '',"
                        " DROP CONSTRAINT {}, ADD PRIMARY KEY (document_id, chunk_index, scope)"
                    ).format(table, sql.Identifier(row[0]))
                )
        self._scoped_tables.add(name)

    async def _dimensions(self, connection: Any, name: str) -> int | None:
        """The table's vector length; ``None`` if absent; 0 if it is not a store table."""
        table = self._table(name).as_string(connection)
        cursor = await connection.execute(
            "SELECT to_regclass(%s) IS NOT NULL, ("
            "  SELECT atttypmod FROM pg_attribute"
            "  WHERE attrelid = to_regclass(%s) AND attname = 'embedding' AND NOT attisdropped"
            ")",
            (table, table),
        )
        exists, typmod = await cursor.fetchone()
        if not exists:
            return None
        return int(typmod) if typmod is not None and typmod > 0 else 0

    async def create_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=False)

    async def create_lexical_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=True)

    async def _create(self, name: str, dimensions: int, *, lexical: bool) -> None:
        from psycopg import sql

        table = self._table(name)
        _, opclass, _ = _METRICS[self.parameters.distance]

        async def create(connection: Any) -> None:
            async with connection.transaction():
                await connection.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"ragflow_config:table:{name}",),
                )
                if await self._dimensions(connection, name) is not None:
                    return
                await connection.execute(
                    sql.SQL(
                        "CREATE TABLE {} ("
                        " document_id text NOT NULL,"
                        " chunk_index integer NOT NULL,"
                        " embedding vector({}) NOT NULL,"
                        " chunk jsonb NOT NULL,"
                        " metadata jsonb NOT NULL,"
                        " scope text NOT NULL DEFAULT '',"
                        " PRIMARY KEY (document_id, chunk_index, scope))"
                    ).format(table, sql.Literal(int(dimensions)))
                )
                await connection.execute(
                    sql.SQL("CREATE INDEX ON {} USING hnsw (embedding {})").format(
                        table, sql.SQL(opclass)
                    )
                )
                await connection.execute(
                    sql.SQL("CREATE INDEX ON {} USING gin (metadata jsonb_path_ops)").format(table)
                )
                if lexical:
                    await connection.execute(
                        sql.SQL(
                            "ALTER TABLE {} ADD COLUMN terms sparsevec({}),"
                            " ADD COLUMN term_ids integer[]"
                        ).format(table, sql.Literal(TERM_SPACE))
                    )
                    await connection.execute(
                        sql.SQL("CREATE INDEX ON {} USING gin (term_ids)").format(table)
                    )

        self._lexical_tables.pop(name, None)
        await self._run(create)

    async def has_lexical(self, name: str) -> bool:
        return await self._run(lambda connection: self._has_terms(connection, name))

    async def _has_terms(self, connection: Any, name: str) -> bool:
        """Whether the table has the lexical columns; remembered per table."""
        if name not in self._lexical_tables:
            cursor = await connection.execute(
                "SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass(%s)"
                " AND attname = 'terms' AND NOT attisdropped)",
                (self._table(name).as_string(connection),),
            )
            (found,) = await cursor.fetchone()
            if not found:
                return False  # not remembered: the table may be made lexical yet
            self._lexical_tables[name] = True
        return self._lexical_tables[name]

    async def delete_collection(self, name: str) -> None:
        from psycopg import sql

        self._lexical_tables.pop(name, None)

        statement = sql.SQL("DROP TABLE IF EXISTS {}").format(self._table(name))
        await self._run(lambda connection: connection.execute(statement))

    async def has_collection(self, name: str) -> bool:
        return await self.collection_dimensions(name) is not None

    async def collection_dimensions(self, name: str) -> int | None:
        return await self._run(lambda connection: self._dimensions(connection, name))

    async def read_pointer(self, name: str) -> Pointer | None:
        psycopg = require("psycopg", "pgvector")
        from psycopg import sql

        statement = sql.SQL("SELECT pointer FROM {} WHERE name = %s").format(
            self._table(POINTER_REGISTRY)
        )

        async def read(connection: Any) -> Any:
            try:
                cursor = await connection.execute(statement, (to_postgres(name),))
            except psycopg.errors.UndefinedTable:
                return None  # no registry yet: a read creates none
            return await cursor.fetchone()

        row = await self._run(read)
        return None if row is None else Pointer.model_validate_json(from_postgres(row[0]))

    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        psycopg = require("psycopg", "pgvector")
        from psycopg import sql

        table = self._table(POINTER_REGISTRY)
        # One row per pointer: the upsert is one statement, so a reader sees
        # the old row or the new one.
        statement = sql.SQL(
            "INSERT INTO {} (name, pointer) VALUES (%s, %s)"
            " ON CONFLICT (name) DO UPDATE SET pointer = EXCLUDED.pointer"
        ).format(table)
        values = (to_postgres(name), to_postgres(pointer.model_dump_json()))

        async def write(connection: Any) -> None:
            try:
                await connection.execute(statement, values)
                return
            except psycopg.errors.UndefinedTable:
                pass
            async with connection.transaction():
                # Serialises concurrent first writes racing to create it.
                await connection.execute(
                    "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))",
                    (f"ragflow_config:table:{POINTER_REGISTRY}",),
                )
                await connection.execute(
                    sql.SQL(
                        "CREATE TABLE IF NOT EXISTS {}"
                        " (name text PRIMARY KEY, pointer text NOT NULL)"
                    ).format(table)
                )
            await connection.execute(statement, values)

        await self._run(write)

    async def delete_pointer(self, name: str) -> None:
        psycopg = require("psycopg", "pgvector")
        from psycopg import sql

        statement = sql.SQL("DELETE FROM {} WHERE name = %s").format(self._table(POINTER_REGISTRY))

        async def delete(connection: Any) -> None:
            with contextlib.suppress(psycopg.errors.UndefinedTable):  # no registry: no pointer
                await connection.execute(statement, (to_postgres(name),))

        await self._run(delete)

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        psycopg = require("psycopg", "pgvector")
        from pgvector import Vector
        from psycopg import sql
        from psycopg.types.json import Jsonb

        statement = sql.SQL(
            "INSERT INTO {} (document_id, chunk_index, scope, embedding, chunk, metadata)"
            " VALUES (%s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (document_id, chunk_index, scope) DO UPDATE SET"
            " embedding = EXCLUDED.embedding, chunk = EXCLUDED.chunk,"
            " metadata = EXCLUDED.metadata"
        ).format(self._table(collection))
        refuse_unencodable(self.store_name, records)
        # A table with a lexical side gets every record's terms (NULL for
        # none), so an overwrite never leaves the old record's terms behind.
        lexical_statement = sql.SQL(
            "INSERT INTO {} (document_id, chunk_index, scope, embedding, chunk, metadata,"
            " terms, term_ids) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
            " ON CONFLICT (document_id, chunk_index, scope) DO UPDATE SET"
            " embedding = EXCLUDED.embedding, chunk = EXCLUDED.chunk,"
            " metadata = EXCLUDED.metadata, terms = EXCLUDED.terms, term_ids = EXCLUDED.term_ids"
        ).format(self._table(collection))
        rows: list[tuple[Any, ...]] = []
        for record in records:
            chunk = to_postgres(record.chunk.model_dump(mode="json"))
            rows.append(
                (
                    to_postgres(record.document_id),
                    record.chunk.chunk_index,
                    record.scope,
                    Vector(record.vector),
                    Jsonb(chunk),
                    Jsonb(chunk["metadata"]),
                )
            )
        size = self.parameters.batch_size

        async def write(connection: Any) -> None:
            nonlocal statement, rows
            await self._key_by_scope(connection, collection)
            if await self._has_terms(connection, collection):
                statement = lexical_statement
                rows = [(*row, *_sparse(record)) for row, record in zip(rows, records, strict=True)]
            try:
                # One transaction: a failed insert leaves no half-written document.
                async with connection.transaction(), connection.cursor() as cursor:
                    for batch in pages(rows, size):
                        await cursor.executemany(statement, batch)
            except (psycopg.DataError, psycopg.errors.ProgramLimitExceeded) as exc:
                # A value past one of PostgreSQL's limits (an index row of 2704
                # bytes, a jsonb of 255 MB): this document, not the store.
                source = records[0].chunk.source
                raise UnstorableDocumentError(
                    self.store_name, f"{source}: {_explain(exc)}; it cannot be stored as it is"
                ) from exc

        await self._run(write)

    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        where, params = _where(metadata_filter, document_id)
        from psycopg import sql

        statement = sql.SQL("DELETE FROM {} WHERE {}").format(self._table(collection), where)
        await self._run(lambda connection: connection.execute(statement, params))

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        if top_k <= 0:
            return []
        from pgvector import Vector
        from psycopg import sql

        operator, _, score = _METRICS[self.parameters.distance]
        where, params = _where(metadata_filter)
        # The index yields its ef_search candidates nearest first, but an
        # iterative scan's later batches only roughly so: under a filter, take
        # ef_search rows that pass it, then the best top_k of them by exact
        # distance. "+ 0" keeps the planner from taking their order as sorted.
        statement = sql.SQL(
            "WITH candidates AS MATERIALIZED ("
            " SELECT document_id, chunk, embedding {} %(query)s AS distance"
            " FROM {} WHERE {} ORDER BY distance LIMIT %(candidates)s)"
            " SELECT document_id, chunk, ({})::float8 FROM candidates"
            " ORDER BY distance + 0 LIMIT %(top_k)s"
        ).format(
            sql.SQL(operator),
            self._table(collection),
            where,
            sql.SQL(score).format(sql.Identifier("distance")),
        )
        ef_search = min(max(top_k, self.parameters.ef_search), _MAX_EF_SEARCH)
        candidates = max(ef_search, top_k) if metadata_filter else top_k
        params.update(query=Vector(query_vector), top_k=top_k, candidates=candidates)

        async def run(connection: Any) -> list[Any]:
            async with connection.transaction():
                await _set_local(connection, self._scan_settings(ef_search))
                cursor = await connection.execute(statement, params)
                rows = await cursor.fetchall()
                if len(rows) < top_k:
                    # Fewer than asked: either that is all there is, or the index
                    # scan gave up. An exact scan settles it.
                    await _set_local(connection, _EXACT_SCAN)
                    cursor = await connection.execute(statement, params)
                    rows = await cursor.fetchall()
                return rows

        rows = await self._run(run)
        results = [
            VectorSearchResult(
                score=float(row_score),
                document_id=from_postgres(document_id),
                chunk=Chunk.model_validate(from_postgres(chunk)),
            )
            for document_id, chunk, row_score in rows
        ]
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
        from pgvector import SparseVector
        from psycopg import sql

        where, params = _where(metadata_filter)
        # The GIN index finds the rows sharing a term; each is scored exactly.
        statement = sql.SQL(
            "SELECT document_id, chunk, ((terms <#> %(query)s) * -1)::float8 AS score"
            " FROM {} WHERE term_ids && %(ids)s::integer[] AND {}"
            " ORDER BY terms <#> %(query)s, document_id, chunk_index LIMIT %(top_k)s"
        ).format(self._table(collection), where)
        params.update(query=SparseVector(weights, TERM_SPACE), ids=sorted(weights), top_k=top_k)

        return [
            VectorSearchResult(
                score=float(score),
                document_id=from_postgres(document_id),
                chunk=Chunk.model_validate(from_postgres(chunk)),
            )
            for document_id, chunk, score in await self._rows(statement, params)
        ]

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        from psycopg import sql

        where, params = _where(metadata_filter)
        table = self._table(collection)
        total_statement = sql.SQL("SELECT count(*) FROM {} WHERE {}").format(table, where)
        terms_statement = sql.SQL(
            "SELECT term, count(*) FROM {}, unnest(term_ids) AS term"
            " WHERE term_ids && %(ids)s::integer[] AND term = ANY(%(ids)s::integer[]) AND {}"
            " GROUP BY term"
        ).format(table, where)
        params["ids"] = sorted(set(terms))

        async def run(connection: Any) -> tuple[int, dict[int, int]]:
            cursor = await connection.execute(total_statement, params)
            (total,) = await cursor.fetchone()
            found: dict[int, int] = {}
            if terms:
                cursor = await connection.execute(terms_statement, params)
                found = {int(term): int(count) for term, count in await cursor.fetchall()}
            return int(total), found

        total, found = await self._run(run)
        return total, {term: found.get(term, 0) for term in dict.fromkeys(terms)}

    def _scan_settings(self, ef_search: int) -> dict[str, str]:
        settings = {"hnsw.ef_search": str(ef_search)}
        if self._iterative_scan:
            settings["hnsw.iterative_scan"] = self.parameters.iterative_scan
            settings["hnsw.max_scan_tuples"] = str(self.parameters.max_scan_tuples)
        if self.parameters.exact:
            settings.update(_EXACT_SCAN)
        return settings

    async def list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[DocumentSummary]:
        from psycopg import sql

        where, params = _where(metadata_filter)
        # Counted in the database from the key columns alone, then one lookup
        # by primary key for each document's lowest-indexed chunk (chunk 0 but
        # for an interrupted write), whose source and metadata the summary
        # carries: a re-run's state read costs one row per document, not
        # every chunk's JSON.
        table = self._table(collection)
        statement = sql.SQL(
            "SELECT counted.document_id, head.chunk->>'source', head.chunk->'metadata',"
            " counted.chunks FROM"
            " (SELECT document_id, count(*) AS chunks, min(chunk_index) AS lowest"
            " FROM {table} WHERE {where} GROUP BY document_id) AS counted"
            " CROSS JOIN LATERAL (SELECT chunk FROM {table} WHERE {where}"
            " AND document_id = counted.document_id AND chunk_index = counted.lowest"
            " LIMIT 1) AS head"
        ).format(table=table, where=where)
        return [
            DocumentSummary(
                document_id=from_postgres(document_id),
                source=from_postgres(source or ""),
                chunk_count=count,
                metadata=from_postgres(metadata or {}),
            )
            for document_id, source, metadata, count in await self._rows(statement, params)
        ]

    async def _chunk_window(
        self,
        collection: str,
        document_id: str,
        window: range,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Chunk]:
        from psycopg import sql

        where, params = _where(metadata_filter, document_id)
        params.update(start=window.start, end=window.stop)
        statement = sql.SQL(
            "SELECT chunk FROM {} WHERE {} AND chunk_index >= %(start)s AND chunk_index < %(end)s"
            " ORDER BY chunk_index"
        ).format(self._table(collection), where)
        rows = await self._rows(statement, params)
        return [Chunk.model_validate(from_postgres(chunk)) for (chunk,) in rows]

    async def document_vectors(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[tuple[Chunk, list[float]]]:
        from psycopg import sql

        where, params = _where(metadata_filter, document_id)
        statement = sql.SQL("SELECT chunk, embedding FROM {} WHERE {}").format(
            self._table(collection), where
        )
        return [
            (Chunk.model_validate(from_postgres(chunk)), embedding.to_list())
            for chunk, embedding in await self._rows(statement, params)
        ]


def _sparse(record: VectorRecord) -> tuple[Any, list[int] | None]:
    """A record's ``terms`` and ``term_ids`` column values."""
    from pgvector import SparseVector

    if not record.terms:
        return None, None
    return SparseVector(record.terms, TERM_SPACE), sorted(record.terms)


def _where(
    metadata_filter: dict[str, Any] | None, document_id: str | None = None
) -> tuple[Any, dict[str, Any]]:
    """A WHERE condition and its parameters; values never enter the SQL text."""
    from psycopg import sql
    from psycopg.types.json import Jsonb

    conditions: list[Any] = []
    params: dict[str, Any] = {}
    if document_id is not None:
        conditions.append(sql.SQL("document_id = %(document_id)s"))
        params["document_id"] = to_postgres(document_id)
    # Per pair, containment of the value or of a list holding it: jsonb's @>
    # finds a scalar inside an array only at the top level, so
    # {"s": ["a", "b"]} @> {"s": "a"} is false while @> {"s": ["a"]} is true
    # (and {"s": "a"} @> {"s": ["a"]} false). Both are served by the GIN index
    # (a BitmapOr of two index scans), and jsonb keeps true apart from 1.
    for number, (path, value) in enumerate(flatten_filter(metadata_filter)):
        both = []
        for leaf, form in ((value, "value"), ([value], "list")):
            contained: dict[str, Any] = {path[-1]: leaf}
            for key in reversed(path[:-1]):
                contained = {key: contained}
            name = f"metadata_{number}_{form}"
            both.append(sql.SQL("metadata @> {}").format(sql.Placeholder(name)))
            params[name] = Jsonb(to_postgres(contained))
        conditions.append(sql.SQL("({})").format(sql.SQL(" OR ").join(both)))
    if not conditions:
        return sql.SQL("TRUE"), params
    return sql.SQL(" AND ").join(conditions), params


# SQLSTATEs worth another attempt on a fresh connection: the server shutting
# down or starting (57P01-57P03), too many connections, a statement timeout.
_RETRYABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300", "57014"})
# What to do, by SQLSTATE.
_ADVICE = {
    "53100": "the database server's disk is full: free space on its data volume, then run again",
    "53200": "the database server is out of memory",
    "25006": "the server accepts no writes (a read-only standby, or default_transaction_read_only "
    "is on): point the connection string at the primary",
    "42501": "permission denied: grant the connecting user CREATE on the schema and "
    "SELECT, INSERT, DELETE on the store's tables",
}


def _retryable(exc: Any) -> bool:
    """A lost or refused connection (no SQLSTATE, or class 08) or a transient server state."""
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _RETRYABLE_STATES


def _explain(exc: Any) -> str:
    """One line: the error class, the server's primary message, and what to do."""
    message = exc.diag.message_primary or " ".join(str(exc).split())
    advice = _ADVICE.get(exc.sqlstate or "")
    return f"{type(exc).__name__}: {message}" + (f"; {advice}" if advice else "")


async def _set_local(connection: Any, settings: dict[str, str]) -> None:
    """``SET LOCAL`` in one round trip: the transaction's end restores the connection."""
    await connection.execute(
        "SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(settings)),
        [part for setting in settings.items() for part in setting],
    )


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(".") if part.isdigit())
