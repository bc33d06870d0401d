"""Qdrant: in memory, on local disk (embedded, no server), or a remote cluster.

``_store`` holds the store; ``_connection`` its client, lifecycle and a local
folder's snapshot; ``_search`` dense and lexical search; ``_pointers`` the
pointer registry; ``_filter`` the filter translation; ``_local`` the local
engine's folder.
"""

from ._store import QdrantStore

__all__ = ["QdrantStore"]
