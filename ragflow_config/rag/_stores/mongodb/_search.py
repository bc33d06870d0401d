"""Searching: ``$vectorSearch`` within the declared filter fields, the lexical side's
exact inner product as an aggregation, and term counts."""

from __future__ import annotations

from typing import Any

from ...._document import Chunk, VectorSearchResult
from ._filter import undeclared_filter_keys
from ._index import MongoIndexes
from ._pipelines import MAX_CANDIDATES, lexical_pipeline, search_pipeline, term_counts_pipeline


class MongoSearch(MongoIndexes):
    """Dense and lexical search, and term counts, within a metadata filter."""

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        target = self._collection(collection)
        if top_k <= 0:
            return []
        p = self.parameters
        if top_k > MAX_CANDIDATES:
            raise ValueError(f"{self.store_name}: top_k is at most {MAX_CANDIDATES}, got {top_k}")
        pipeline = search_pipeline(
            p.index_name, query_vector, top_k, p.candidates_per_result, metadata_filter
        )
        undeclared = undeclared_filter_keys(metadata_filter, p.filter_fields)
        if undeclared:
            raise ValueError(
                f"{self.store_name}: metadata_filter key(s) {', '.join(map(repr, undeclared))} "
                f"are not in filter_fields {list(p.filter_fields)}; declare them so they enter "
                "the vector search index"
            )
        await self._ensure_queryable(collection)
        return [
            VectorSearchResult(
                score=common_score(p.distance, found["score"]),
                document_id=found["document_id"],
                chunk=Chunk.model_validate(found["chunk"]),
            )
            for found in await self._aggregate(target, pipeline)
        ]

    async def lexical_search(
        self,
        collection: str,
        weights: dict[int, float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        target = self._collection(collection)
        if top_k <= 0 or not weights:
            return []
        pipeline = lexical_pipeline(weights, top_k, metadata_filter)
        return [
            VectorSearchResult(
                score=found["score"],
                document_id=found["document_id"],
                chunk=Chunk.model_validate(found["chunk"]),
            )
            for found in await self._aggregate(target, pipeline)
        ]

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        target = self._collection(collection)
        wanted = list(dict.fromkeys(terms))
        pipeline = term_counts_pipeline(wanted, metadata_filter)
        (counted,) = await self._aggregate(target, pipeline)
        total = counted["total"][0]["n"] if counted["total"] else 0
        holding = {group["_id"]: group["n"] for group in counted["holding"]}
        return total, {term: holding.get(term, 0) for term in wanted}


def common_score(distance: str, score: float) -> float:
    """MongoDB's 0..1 ``vectorSearchScore`` back on the common scale of ``distance``.

    MongoDB reports cosine and dotProduct as ``(1 + x) / 2`` and euclidean
    as ``1 / (1 + d)``.
    """
    if distance in {"cosine", "dot"}:
        return 2.0 * score - 1.0
    if score <= 0.0:
        return float("-inf")
    return -(1.0 / score - 1.0)
