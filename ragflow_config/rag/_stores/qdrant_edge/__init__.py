"""Qdrant Edge: Qdrant's in-process engine on a local folder (no server)."""

from .store import QdrantEdgeStore

__all__ = ["QdrantEdgeStore"]
