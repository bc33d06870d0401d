"""Searching: the nearest rows through the HNSW index (or every row, exactly), the
lexical side's exact inner product over the rows sharing a term, and term counts."""

from __future__ import annotations

from typing import Any

from ...._document import Chunk, VectorRecord, VectorSearchResult
from ..._analyzer import TERM_SPACE
from .._pg_text import from_postgres
from ._connection import MAX_EF_SEARCH, PgConnection
from ._filter import where as _where

# distance -> (operator, operator class, score as SQL over the operator's value)
METRICS = {
    "cosine": ("<=>", "vector_cosine_ops", "1 - ({})"),
    "dot": ("<#>", "vector_ip_ops", "-({})"),
    "euclidean": ("<->", "vector_l2_ops", "-({})"),
}
# A search under these compares every row its filter lets through (which the
# GIN index may narrow), whatever plans the session or server prefers.
_EXACT_SCAN = {"enable_indexscan": "off", "enable_seqscan": "on", "enable_bitmapscan": "on"}


class PgSearch(PgConnection):
    """Dense and lexical search, and term counts, within a metadata filter."""

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

        operator, _, score = METRICS[self.parameters.distance]
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
        ef_search = min(max(top_k, self.parameters.ef_search), MAX_EF_SEARCH)
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


async def _set_local(connection: Any, settings: dict[str, str]) -> None:
    """``SET LOCAL`` in one round trip: the transaction's end restores the connection."""
    await connection.execute(
        "SELECT " + ", ".join(["set_config(%s, %s, true)"] * len(settings)),
        [part for setting in settings.items() for part in setting],
    )


def sparse_columns(record: VectorRecord) -> tuple[Any, list[int] | None]:
    """A record's ``terms`` and ``term_ids`` column values."""
    from pgvector import SparseVector

    if not record.terms:
        return None, None
    return SparseVector(record.terms, TERM_SPACE), sorted(record.terms)
