"""The Qdrant Edge store's searches: dense, lexical, term counts, and paged reads."""

from __future__ import annotations

from typing import Any

from ...._document import Chunk, VectorSearchResult
from ._connection import LEXICAL, PAGE, TERMS, QdrantEdgeConnection
from ._filter import with_condition


class QdrantEdgeSearch(QdrantEdgeConnection):
    """Searches through the engine's indexes: HNSW, the sparse inverted index, payload indexes."""

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        if top_k <= 0:
            return []
        sign = -1.0 if self.parameters.distance == "euclidean" else 1.0
        query = self._edge.Query.Nearest(list(query_vector))
        return await self._best(collection, query, top_k, metadata_filter, sign)

    async def lexical_search(
        self,
        collection: str,
        weights: dict[int, float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        if top_k <= 0 or not weights:
            return []
        edge = self._edge
        terms = sorted(weights)
        sparse = edge.SparseVector(terms, [weights[term] for term in terms])
        query = edge.Query.Nearest(sparse, using=LEXICAL)
        return await self._best(collection, query, top_k, metadata_filter)

    async def _best(
        self,
        collection: str,
        query: Any,
        top_k: int,
        metadata_filter: dict[str, Any] | None,
        sign: float = 1.0,
    ) -> list[VectorSearchResult]:
        """The ``top_k`` points best for ``query`` within the filter, best first; ``sign``
        turns a distance into a score."""
        edge = self._edge
        shard = await self._shard(collection)
        request = edge.QueryRequest(
            limit=top_k,
            query=query,
            filter=self._filter(metadata_filter),
            with_payload=edge.PayloadSelector.Exclude([TERMS]),
            params=self._search_params,
        )
        points = await self._engine(shard.query, request)
        return [
            VectorSearchResult(
                score=sign * point.score,
                document_id=point.payload["document_id"],
                chunk=Chunk.model_validate(point.payload["chunk"]),
            )
            for point in points
        ]

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        edge = self._edge
        shard = await self._shard(collection)
        scope = self._filter(metadata_filter)

        def count(condition: Any | None) -> int:
            selected = scope if condition is None else with_condition(edge, scope, condition)
            return int(shard.count(edge.CountRequest(exact=True, filter=selected)))

        def counts() -> tuple[int, dict[int, int]]:
            # Each count reads the terms index: one term's postings, not every point.
            held = {
                term: count(edge.FieldCondition(key=TERMS, match=edge.MatchValue(term)))
                for term in dict.fromkeys(terms)
            }
            return count(None), held

        return await self._engine(counts)

    async def _scroll(
        self, shard: Any, selected: Any, payload: Any, vectors: Any = False
    ) -> list[Any]:
        """Every point ``selected`` picks, a page at a time."""
        edge = self._edge

        def read() -> list[Any]:
            found: list[Any] = []
            offset = None
            while True:
                request = edge.ScrollRequest(
                    offset=offset,
                    limit=PAGE,
                    filter=selected,
                    with_payload=payload,
                    with_vector=vectors,
                )
                page, offset = shard.scroll(request)
                found.extend(page)
                if offset is None:
                    return found

        return await self._engine(read)
