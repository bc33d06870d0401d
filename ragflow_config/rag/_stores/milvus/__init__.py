"""Milvus: a local Milvus Lite file (embedded, no server) or a Milvus server.

``_store`` holds the store; ``_connection`` its client and lifecycle; ``_lite``
the Milvus Lite server processes this process shares; ``_search`` dense and
lexical search; ``_pointers`` the pointer registry; ``_filter`` the filter
translation; ``_names`` collection names as Milvus spells them.
"""

from ._names import milvus_name
from ._store import MilvusLiteStore

__all__ = ["MilvusLiteStore", "milvus_name"]
