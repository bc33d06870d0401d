"""Where a run's vectors came from: what it cost, per knowledge base (issue 40)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any


@dataclass
class VectorCounts:
    """Counts of chunk vectors by their origin.

    ``embedded``: made by the model. ``reused``: taken from the document's
    stored version (an edit re-embeds only its changed chunks).
    ``cache_hits``/``cache_misses``: lookups in the embedding cache; a miss is
    then embedded, so with a cache ``embedded`` equals the misses.
    """

    embedded: int = 0
    reused: int = 0
    cache_hits: int = 0
    cache_misses: int = 0

    def count(self, vectors: int, cache_hits: int = 0, cache_misses: int = 0) -> None:
        """``vectors`` a model call returned, ``cache_hits`` of them from its cache."""
        self.embedded += vectors - cache_hits
        self.cache_hits += cache_hits
        self.cache_misses += cache_misses

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)
