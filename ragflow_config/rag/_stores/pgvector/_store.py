"""PostgreSQL with pgvector: one table per knowledge base."""

from __future__ import annotations

from typing import Any, ClassVar

from ...._document import Chunk, DocumentSummary, VectorRecord
from ...._errors import UnstorableDocumentError
from ...._extras import require
from ..._analyzer import TERM_SPACE
from .._paging import pages
from .._pg_text import from_postgres, to_postgres
from ..base import refuse_unencodable
from ._diagnostics import explain
from ._filter import where as _where
from ._pointers import PgPointers
from ._search import METRICS, PgSearch, sparse_columns


class PgVectorStore(PgSearch, PgPointers):
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
        _, opclass, _ = METRICS[self.parameters.distance]

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
                rows = [
                    (*row, *sparse_columns(record))
                    for row, record in zip(rows, records, strict=True)
                ]
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
                    self.store_name, f"{source}: {explain(exc)}; it cannot be stored as it is"
                ) from exc

        await self._run(write)

    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        where, params = _where(metadata_filter, document_id)
        from psycopg import sql

        statement = sql.SQL("DELETE FROM {} WHERE {}").format(self._table(collection), where)
        await self._run(lambda connection: connection.execute(statement, params))

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
