"""PostgreSQL with pgvector: one table per knowledge base.

``_store`` holds the store; ``_connection`` its connection and lifecycle;
``_search`` dense and lexical search; ``_pointers`` the pointer registry;
``_filter`` the filter translation; ``_diagnostics`` what the server's errors
mean.
"""

from ._store import PgVectorStore

__all__ = ["PgVectorStore"]
