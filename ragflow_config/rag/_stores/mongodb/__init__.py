"""MongoDB Vector Search (Atlas, or self-hosted with mongot): one collection per knowledge base.

``_store`` holds the store; ``_connection`` its client and lifecycle; ``_index``
the vector search index; ``_search`` dense and lexical search; ``_pipelines``
the aggregation pipelines; ``_pointers`` the pointer registry; ``_filter`` the
filter translation.
"""

from ._filter import match_query, metadata_clauses
from ._index import index_definition, index_state
from ._pipelines import documents_pipeline, search_pipeline
from ._search import common_score
from ._store import MongoDBStore

__all__ = [
    "MongoDBStore",
    "common_score",
    "documents_pipeline",
    "index_definition",
    "index_state",
    "match_query",
    "metadata_clauses",
    "search_pipeline",
]
