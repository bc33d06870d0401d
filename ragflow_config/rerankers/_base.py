"""What every reranker does: score candidates against a query."""

from __future__ import annotations

from collections.abc import Sequence

from .._component import Component


class RerankerBase(Component):
    """Scores passages against a query; higher means more relevant."""

    async def scores(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in the passages' order."""
        raise NotImplementedError
