"""Searching: approximate kNN over ``vector``, and the lexical side's scored search and
term counts, all within the metadata filter."""

from __future__ import annotations

import math
from functools import partial
from typing import Any

from ...._document import Chunk, VectorSearchResult
from ._connection import MAX_K, ElasticsearchConnection
from ._filter import filter_clauses
from ._lexical import lexical_request, term_counts_request


class ElasticsearchSearch(ElasticsearchConnection):
    """Dense and lexical search, and term counts, within a metadata filter."""

    async def search(
        self,
        collection: str,
        query_vector: list[float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        index = self._index(collection)
        if top_k <= 0:
            return []
        if top_k > MAX_K:
            raise ValueError(f"{self.store_name}: top_k is at most {MAX_K}, got {top_k}")
        knn: dict[str, Any] = {
            "field": "vector",
            "query_vector": query_vector,
            "k": top_k,
            "num_candidates": max(self.parameters.num_candidates, top_k),
        }
        clauses = filter_clauses(metadata_filter)
        if clauses:
            knn["filter"] = clauses  # inside knn, so the k nearest are all in scope
        response = await self._call(
            lambda: self.client.search(
                index=index, knn=knn, size=top_k, source=["document_id", "chunk"]
            )
        )
        assert response is not None
        distance = self.parameters.distance
        return [
            VectorSearchResult(
                score=common_score(distance, hit["_score"]),
                document_id=hit["_source"]["document_id"],
                chunk=Chunk.model_validate(hit["_source"]["chunk"]),
            )
            for hit in response.body["hits"]["hits"]
        ]

    async def lexical_search(
        self,
        collection: str,
        weights: dict[int, float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        index = self._index(collection)
        if top_k <= 0 or not weights:
            return []
        if top_k > MAX_K:
            raise ValueError(f"{self.store_name}: top_k is at most {MAX_K}, got {top_k}")
        request = lexical_request(weights, top_k, metadata_filter)
        response = await self._call(partial(self.client.search, index=index, **request))
        assert response is not None
        return [
            VectorSearchResult(
                score=hit["_score"],
                document_id=hit["_source"]["document_id"],
                chunk=Chunk.model_validate(hit["_source"]["chunk"]),
            )
            for hit in response.body["hits"]["hits"]
        ]

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        index = self._index(collection)
        wanted = list(dict.fromkeys(terms))
        request = term_counts_request(wanted, metadata_filter)
        response = await self._call(partial(self.client.search, index=index, **request))
        assert response is not None
        body = response.body
        buckets = body.get("aggregations", {}).get("holding", {}).get("buckets", {})
        total = int(body["hits"]["total"]["value"])
        return total, {term: int(buckets[str(term)]["doc_count"]) for term in wanted}


def common_score(distance: str, score: float) -> float:
    """ES's positive ``_score`` back on the common scale of ``distance``.

    ES reports cosine as ``(1 + cos) / 2``, ``max_inner_product`` as ``1 + ip``
    (or ``1 / (1 - ip)`` when negative) and ``l2_norm`` as ``1 / (1 + d²)``.
    """
    if distance == "cosine":
        return 2.0 * score - 1.0
    if distance == "dot":
        return score - 1.0 if score >= 1.0 else 1.0 - 1.0 / score
    if score <= 0.0:
        return -math.inf
    return -math.sqrt(max(0.0, 1.0 / score - 1.0))
