"""Searching: the nearest rows to a dense vector or to a query's weighted terms (the
lexical side's sparse vector), and the term counts lexical scoring weighs terms by."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from ...._document import Chunk, VectorSearchResult
from . import _filter
from ._connection import MilvusConnection
from ._names import milvus_name

METRICS = {"cosine": "COSINE", "dot": "IP", "euclidean": "L2"}
_MAX_SEARCH_LIMIT = 16384  # Milvus's largest top k


class MilvusSearch(MilvusConnection):
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
        distance = self.parameters.distance
        hits = await self._best(
            collection, query_vector, "vector", METRICS[distance], top_k, metadata_filter
        )
        results = [
            VectorSearchResult(
                score=_score(distance, float(hit["distance"])),
                document_id=hit["entity"]["document_id"],
                chunk=Chunk.model_validate(hit["entity"]["chunk"]),
            )
            for hit in hits
        ]
        results.sort(key=lambda result: result.score, reverse=True)
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
        hits = await self._best(collection, dict(weights), "terms", "IP", top_k, metadata_filter)
        return [
            VectorSearchResult(
                score=float(hit["distance"]),
                document_id=hit["entity"]["document_id"],
                chunk=Chunk.model_validate(hit["entity"]["chunk"]),
            )
            for hit in hits
        ]

    async def _best(
        self,
        collection: str,
        query: Any,
        field: str,
        metric: str,
        top_k: int,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Any]:
        """The ``top_k`` hits nearest ``query`` in ``field`` within the filter, as Milvus
        orders them. A filter Milvus matches only approximately is matched here too."""
        expression = _filter.expression(metadata_filter)
        approximate = _filter.approximate(metadata_filter)

        def best(limit: int) -> Callable[[Any], Awaitable[Any]]:
            return lambda client: client.search(
                milvus_name(collection),
                data=[query],
                filter=expression,
                limit=limit,
                output_fields=["document_id", "chunk"],
                anns_field=field,
                search_params={"metric_type": metric},
                timeout=self.parameters.timeout,
            )

        limit = top_k
        while True:
            [hits] = await self._call(best(limit))
            found = len(hits)
            if approximate:
                hits = [hit for hit in hits if _filter.within(hit["entity"], metadata_filter)][
                    :top_k
                ]
            # The filter let in near misses: ask for more until top_k remain.
            if len(hits) >= top_k or found < limit or limit >= _MAX_SEARCH_LIMIT:
                return hits
            limit = min(_MAX_SEARCH_LIMIT, limit * 4)

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        expression = _filter.expression(metadata_filter)
        wanted = list(dict.fromkeys(terms))
        if _filter.approximate(metadata_filter):  # count the exact matches here
            rows = _filter.exact(
                await self._query_all(collection, expression, ["chunk", "term_ids"]),
                metadata_filter,
            )
            held = Counter(t for row in rows for t in set(row["term_ids"] or []))
            return len(rows), {term: held[term] for term in wanted}

        async def count(clause: str) -> int:
            condition = " and ".join(c for c in (expression, clause) if c)
            rows = await self._call(
                lambda client: client.query(
                    milvus_name(collection),
                    filter=condition,
                    output_fields=["count(*)"],
                    timeout=self.parameters.timeout,
                )
            )
            return int(rows[0]["count(*)"])

        total = await count("")
        return total, {
            term: await count(f"array_contains(term_ids, {int(term)})") for term in wanted
        }


def _score(distance: str, reported: float) -> float:
    # Milvus reports L2 as the squared distance.
    return -math.sqrt(max(reported, 0.0)) if distance == "euclidean" else reported
