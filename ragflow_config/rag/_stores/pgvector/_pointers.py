"""The pointer registry: a table of one row per pointer, made by its first write."""

from __future__ import annotations

import contextlib
from typing import Any

from ...._extras import require
from .._pg_text import from_postgres, to_postgres
from .._pointer import POINTER_REGISTRY, Pointer
from ._connection import PgConnection


class PgPointers(PgConnection):
    """Reads and writes the pointers (``_pointer``) in the table ``POINTER_REGISTRY``."""

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
