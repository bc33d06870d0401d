"""The lexical side's requests: the exact inner product of stored and query weights,
scored by a script, and the term counts of a ``filters`` aggregation."""

from __future__ import annotations

import struct
from typing import Any

from ._filter import filter_clauses

# The lexical side's score: the inner product of a record's stored weights
# with the query's. Each stored entry is one long, the term id above the
# weight's float32 bits (see ``packed_terms``), so the weights keep the
# precision Qdrant, Milvus and pgvector keep; ``rank_features`` and
# ``sparse_vector`` keep 9 significant bits, which would reorder close hits.
_INNER_PRODUCT = """
double score = 0;
def entries = doc['weighted_terms'];
for (int i = 0; i < entries.size(); ++i) {
  long entry = entries.get(i);
  def weight = params.weights.get(Long.toString(entry >>> 32));
  if (weight != null) {
    score += weight * Float.intBitsToFloat((int) entry);
  }
}
return score;
"""


def packed_terms(terms: dict[int, float]) -> list[int]:
    """Each term as one long: its id above its weight's float32 bits, read by ``_INNER_PRODUCT``.

    Weights are positive, so the bits are those of a positive ``int`` and
    every long is too; ids lie below ``TERM_SPACE`` (2^29).
    """
    return [
        term << 32 | struct.unpack("<I", struct.pack("<f", weight))[0]
        for term, weight in sorted(terms.items())
    ]


def lexical_request(
    weights: dict[int, float], top_k: int, metadata_filter: dict[str, Any] | None
) -> dict[str, Any]:
    """The search scoring the records within the filter that hold a query term.

    Ties go by document id and chunk index, as ``_retrieval.ordered`` breaks them.
    """
    holding = {"terms": {"term_ids": sorted(weights)}}
    return {
        "query": {
            "script_score": {
                "query": {"bool": {"filter": [holding, *filter_clauses(metadata_filter)]}},
                "script": {
                    "source": _INNER_PRODUCT,
                    "params": {"weights": {str(term): w for term, w in sorted(weights.items())}},
                },
            }
        },
        "size": top_k,
        "sort": ["_score", {"document_id": "asc"}, {"chunk_index": "asc"}],
        "track_scores": True,
        "source": ["document_id", "chunk"],
    }


def term_counts_request(terms: list[int], metadata_filter: dict[str, Any] | None) -> dict[str, Any]:
    """The count of records within the filter, and of those holding each term."""
    clauses = filter_clauses(metadata_filter)
    request: dict[str, Any] = {
        "query": {"bool": {"filter": clauses}} if clauses else {"match_all": {}},
        "size": 0,
        "track_total_hits": True,  # exact, past ES's default of counting to 10,000
    }
    if terms:
        holding = {str(term): {"term": {"term_ids": term}} for term in terms}
        request["aggregations"] = {"holding": {"filters": {"filters": holding}}}
    return request
