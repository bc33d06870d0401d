"""What every reranker does: reorder a search's candidates by relevance to the queries."""

from __future__ import annotations

from collections.abc import Sequence

from .._component import Component
from .._document import VectorSearchResult
from ..message import DataBlock, TextBlock

Query = str | TextBlock | DataBlock


class RerankerBase(Component):
    """Reorders candidates best first; a text reranker only implements :meth:`scores`."""

    async def scores(self, query: str, passages: Sequence[str]) -> list[float]:
        """One score per passage, in the passages' order; higher is more relevant."""
        raise NotImplementedError(f"{type(self).__name__} reorders candidates without scores")

    async def rerank(
        self, queries: Sequence[Query], candidates: Sequence[VectorSearchResult], top_k: int
    ) -> list[VectorSearchResult]:
        """The ``top_k`` best candidates, best first.

        Text candidates are scored against the text queries (joined by
        newlines) and carry the reranker's score; the ones it cannot read
        (images, audio) follow in their order. Equal scores keep the
        candidates' order.
        """
        readable = [
            (hit, hit.chunk.content.text)
            for hit in candidates
            if isinstance(hit.chunk.content, TextBlock)
        ]
        unreadable = [hit for hit in candidates if not isinstance(hit.chunk.content, TextBlock)]
        if not readable:
            return list(candidates[:top_k])
        query = "\n".join(
            q.text if isinstance(q, TextBlock) else q
            for q in queries
            if not isinstance(q, DataBlock)
        )
        scores = await self.scores(query, [text for _, text in readable])
        rescored = [
            hit.model_copy(update={"score": score})
            for (hit, _), score in zip(readable, scores, strict=True)
        ]
        rescored.sort(key=lambda hit: hit.score, reverse=True)  # stable: ties keep their order
        return (rescored + unreadable)[:top_k]
