"""The indexes' mappings and names: a knowledge base's index, the pointer registry's."""

from __future__ import annotations

from typing import Any

# ES similarity per metric. ``dot`` is ``max_inner_product``: ES's ``dot_product``
# rejects vectors that are not unit length, and our ``dot`` means any inner product.
SIMILARITY = {"cosine": "cosine", "dot": "max_inner_product", "euclidean": "l2_norm"}

_FORBIDDEN_INDEX_CHARACTERS = frozenset('\\/*?"<>| ,#:')
# A keyword longer than this (in characters) is stored but not indexed, so a huge
# metadata string never fails the write on Lucene's 32766-byte term limit.
_MAX_TERM_CHARACTERS = 8191


# The pointer registry's documents: the name, and the record, kept but not indexed.
POINTER_MAPPINGS: dict[str, Any] = {
    "dynamic": "strict",
    "properties": {
        "name": {"type": "keyword"},
        "pointer": {"type": "object", "enabled": False},
    },
}


def index_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be an Elasticsearch index name, or ``None`` if it can."""
    if not name:
        return "it is empty"
    if name != name.lower():
        return "Elasticsearch index names must be lower-case"
    if name in {".", ".."} or name[0] in "-_+":
        return "it must not be '.' or '..' nor start with '-', '_' or '+'"
    bad = sorted(set(name) & _FORBIDDEN_INDEX_CHARACTERS)
    if bad:
        return f"it must not contain {' '.join(repr(c) for c in bad)}"
    if len(name.encode()) > 255:
        return "it is longer than 255 bytes"
    return None


def index_mappings(dimensions: int, distance: str, *, lexical: bool = False) -> dict[str, Any]:
    """The mapping of a new index for ``dimensions``-long vectors, and terms if ``lexical``."""
    properties: dict[str, Any] = {
        "vector": {
            "type": "dense_vector",
            "dims": dimensions,
            "index": True,
            "similarity": SIMILARITY[distance],
            "index_options": {"type": "hnsw"},
        },
        "document_id": {"type": "keyword"},
        "chunk_index": {"type": "integer"},
        "chunk": {"type": "object", "enabled": False},
        "metadata_terms": {"type": "keyword", "ignore_above": _MAX_TERM_CHARACTERS},
    }
    if lexical:
        properties["term_ids"] = {"type": "integer"}
        # Read by the scoring script only: doc values, no index.
        properties["weighted_terms"] = {"type": "long", "index": False}
    return {"dynamic": "strict", "properties": properties}
