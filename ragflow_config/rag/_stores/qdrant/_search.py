"""Searching: the nearest points to a dense or a sparse query, and the lexical side.

The lexical side is a sparse vector ``lexical`` beside the unnamed dense one,
scored by Qdrant's inner product, and a payload list ``terms`` of its term ids,
which ``term_counts`` counts: on a server with filtered ``count`` requests
(served by a payload index), locally in one scan of the scope.
"""

from __future__ import annotations

from typing import Any

from ...._document import Chunk, VectorRecord, VectorSearchResult
from ._connection import QdrantConnection

LEXICAL = "lexical"  # the sparse vector holding a record's terms
TERMS = "terms"  # ...and the payload field listing them, which term_counts counts


class QdrantSearch(QdrantConnection):
    """Dense and lexical search, and the term counts lexical scoring weighs terms by."""

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
        return await self._best(collection, query_vector, top_k, metadata_filter, sign=sign)

    async def lexical_search(
        self,
        collection: str,
        weights: dict[int, float],
        top_k: int = 5,
        metadata_filter: dict[str, Any] | None = None,
    ) -> list[VectorSearchResult]:
        if top_k <= 0 or not weights:
            return []
        models = self._models()
        terms = sorted(weights)
        query = models.SparseVector(indices=terms, values=[weights[t] for t in terms])
        return await self._best(
            collection,
            query,
            top_k,
            metadata_filter,
            using=LEXICAL,
            payload=["document_id", "chunk"],
        )

    async def _best(
        self,
        collection: str,
        query: Any,
        top_k: int,
        metadata_filter: dict[str, Any] | None,
        *,
        using: str | None = None,
        payload: Any = True,
        sign: float = 1.0,
    ) -> list[VectorSearchResult]:
        """The ``top_k`` points nearest ``query`` in the vector ``using`` (the dense one
        if ``None``), within the filter, best first; ``sign`` turns a distance into a score."""
        query_filter = self._filter(metadata_filter)
        response = await self._call(
            lambda: self.client.query_points(
                collection_name=collection,
                query=query,
                using=using,
                limit=top_k,
                query_filter=query_filter,
                with_payload=payload,
            )
        )
        return [
            VectorSearchResult(
                score=sign * point.score,
                document_id=point.payload["document_id"],
                chunk=Chunk.model_validate(point.payload["chunk"]),
            )
            for point in response.points
        ]

    async def term_counts(
        self, collection: str, terms: list[int], metadata_filter: dict[str, Any] | None = None
    ) -> tuple[int, dict[int, int]]:
        models = self._models()
        scope = self._filter(metadata_filter)
        if self.parameters.url is None:
            # The local engine filters in Python, a scan per count: one scan
            # reading every term list in scope costs less than one count.
            wanted = set(terms)
            total, held = 0, dict.fromkeys(terms, 0)
            async for point in self._scroll(collection, scope, [TERMS]):
                total += 1
                for term in wanted.intersection((point.payload or {}).get(TERMS) or ()):
                    held[term] += 1
            return total, held
        conditions = list(scope.must) if scope is not None else []

        async def count(term: int | None) -> int:
            must = conditions
            if term is not None:
                match = models.MatchValue(value=term)
                must = [*conditions, models.FieldCondition(key=TERMS, match=match)]
            flt = models.Filter(must=must) if must else None
            result = await self._call(
                lambda: self.client.count(collection_name=collection, count_filter=flt, exact=True)
            )
            return int(result.count)

        total = await count(None)
        return total, {term: await count(term) for term in dict.fromkeys(terms)}


def point_vectors(models: Any, record: VectorRecord) -> dict[str, Any]:
    """The dense vector, unnamed, and the record's terms as the sparse vector ``lexical``."""
    terms = record.terms or {}
    if not terms:
        return {"": record.vector}
    indices = sorted(terms)
    sparse = models.SparseVector(indices=indices, values=[terms[t] for t in indices])
    return {"": record.vector, LEXICAL: sparse}
