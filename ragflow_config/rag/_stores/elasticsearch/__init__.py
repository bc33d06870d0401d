"""Elasticsearch: one index per collection, approximate kNN over a ``dense_vector`` field.

``_store`` holds the store; ``_connection`` its client and lifecycle; ``_search``
dense and lexical search; ``_lexical`` the lexical side's requests; ``_pointers``
the pointer registry; ``_filter`` the filter translation; ``_mappings`` the
indexes' mappings and names.
"""

from ._mappings import index_mappings
from ._search import common_score
from ._store import ElasticsearchStore

__all__ = ["ElasticsearchStore", "common_score", "index_mappings"]
