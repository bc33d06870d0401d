"""The aggregation pipelines the store runs (vector search, lexical scoring, term counts,
document listing) and a record as the document it stores."""

from __future__ import annotations

import struct
from typing import Any

from ...._document import VectorRecord
from ._filter import match_query, metadata_clauses

MAX_CANDIDATES = 10_000  # Atlas caps numCandidates (and so limit) here
_MIN_CANDIDATES = 100
TERM_IDS = "terms.t"  # a lexical record's term ids, under an ordinary (multikey) index


def search_pipeline(
    index_name: str,
    query_vector: list[float],
    top_k: int,
    candidates_per_result: int,
    metadata_filter: dict[str, Any] | None,
) -> list[dict[str, Any]]:
    stage: dict[str, Any] = {
        "index": index_name,
        "path": "vector",
        "queryVector": query_vector,
        "numCandidates": min(MAX_CANDIDATES, max(_MIN_CANDIDATES, candidates_per_result * top_k)),
        "limit": top_k,
    }
    clauses = metadata_clauses(metadata_filter)
    if clauses:
        stage["filter"] = {"$and": clauses}
    return [
        {"$vectorSearch": stage},
        {
            "$project": {
                "_id": 0,
                "document_id": 1,
                "chunk": 1,
                "score": {"$meta": "vectorSearchScore"},
            }
        },
    ]


def lexical_pipeline(
    weights: dict[int, float], top_k: int, metadata_filter: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The records within the filter holding a query term, by the inner product, best first.

    Ties go by document id and chunk index, as ``_retrieval.ordered`` breaks them.
    """
    ids = sorted(weights)
    query_weight = {
        "$arrayElemAt": [[weights[t] for t in ids], {"$indexOfArray": [ids, "$$this.t"]}]
    }
    held = {"$filter": {"input": "$terms", "cond": {"$in": ["$$this.t", ids]}}}
    score = {"$sum": {"$map": {"input": held, "in": {"$multiply": ["$$this.w", query_weight]}}}}
    return [
        {"$match": {"$and": [{TERM_IDS: {"$in": ids}}, *metadata_clauses(metadata_filter)]}},
        {"$project": {"_id": 0, "document_id": 1, "chunk": 1, "score": score}},
        {"$sort": {"score": -1, "document_id": 1, "chunk.chunk_index": 1}},
        {"$limit": top_k},
    ]


def term_counts_pipeline(
    terms: list[int], metadata_filter: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """One document: ``total`` (records within the filter) and ``holding`` (per term)."""
    query = match_query(None, metadata_filter)
    return [
        *([{"$match": query}] if query else []),
        {
            "$facet": {
                "total": [{"$count": "n"}],
                "holding": [
                    {"$match": {TERM_IDS: {"$in": terms}}},
                    {"$unwind": "$terms"},
                    {"$match": {TERM_IDS: {"$in": terms}}},
                    {"$group": {"_id": "$terms.t", "n": {"$sum": 1}}},
                ],
            }
        },
    ]


def documents_pipeline(metadata_filter: dict[str, Any] | None) -> list[dict[str, Any]]:
    """One group per document: its chunk count and lowest-indexed chunk."""
    query = match_query(None, metadata_filter)
    return [
        *([{"$match": query}] if query else []),
        {
            "$group": {
                "_id": "$document_id",
                "chunk_count": {"$sum": 1},
                "first_chunk": {"$top": {"sortBy": {"chunk.chunk_index": 1}, "output": "$chunk"}},
            }
        },
    ]


def stored_document(record: VectorRecord) -> tuple[str, dict[str, Any]]:
    """The ``_id`` and body of ``record``'s MongoDB document."""
    _id = record.key
    document = {
        "_id": _id,
        "document_id": record.document_id,
        "vector": record.vector,
        "chunk": record.chunk.model_dump(mode="json"),
    }
    if record.terms:
        document["terms"] = [
            {"t": term, "w": _float32(weight)} for term, weight in sorted(record.terms.items())
        ]
    return _id, document


def _float32(value: float) -> float:
    """``value`` at the float32 precision Qdrant, Milvus and pgvector store weights at,
    so the same chunks score the same here."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])
