"""Searching several knowledge bases at once and merging their rankings.

Scores are comparable only between knowledge bases in the same *score
space*: the same embedding model with the same parameters, in the same kind
of store configured the same way (so with the same metric). Within a space,
hits are merged by score. Across spaces a cosine of one model says nothing
about a dot product or a negated distance of another, so their rankings are
merged by reciprocal rank fusion (Cormack, Clarke and Buettcher, 2009): a
hit scores ``sum(1 / (RRF_K + rank))`` over the rankings that contain it.
With a single space the result is plain score order. A ``RemoteKnowledgeBase``
is a space of its own: its server does not say what model and store rank it.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, TypeAlias

from .format import Query

if TYPE_CHECKING:  # annotations only: importing the knowledge base costs `validate` its models
    from ...rag import KnowledgeBase, RemoteKnowledgeBase, VectorSearchResult

# What a RAG middleware searches: a knowledge base here, or one a server serves.
Searchable: TypeAlias = "KnowledgeBase | RemoteKnowledgeBase"

# A chunk's identity: where its base keeps it (store object and collection, or a
# remote base's URL and name), document id, chunk index.
ChunkKey = tuple[object, str, str, int]

# The constant of the original paper; it damps the weight of the very top ranks.
RRF_K = 60


async def search_across(
    knowledge_bases: Sequence[Searchable],
    queries: Sequence[Query],
    *,
    limit: int,
    score_threshold: float | None,
) -> list[VectorSearchResult]:
    """The best ``limit`` hits of all bases for all queries, each chunk once.

    Every base is searched concurrently for ``limit`` hits (the threshold
    applies to each base's own scores). A chunk is the same chunk when it has
    the same document id and chunk index in the same collection of the same
    store object; found through several bases, it counts once per space.
    """
    if not knowledge_bases or not queries:
        return []
    results = await asyncio.gather(
        *(
            kb.search(list(queries), top_k=limit, score_threshold=score_threshold)
            for kb in knowledge_bases
        )
    )
    spaces: dict[str, dict[ChunkKey, VectorSearchResult]] = {}
    for kb, hits in zip(knowledge_bases, results, strict=True):
        space, (home, collection) = _place(kb)
        best = spaces.setdefault(space, {})
        for hit in hits:
            key: ChunkKey = (home, collection, hit.document_id, hit.chunk.chunk_index)
            if key not in best or hit.score > best[key].score:
                best[key] = hit
    fused: dict[ChunkKey, float] = {}
    chosen: dict[ChunkKey, VectorSearchResult] = {}
    for best in spaces.values():
        ranking = sorted(best.items(), key=lambda item: item[1].score, reverse=True)[:limit]
        for rank, (chunk_key, hit) in enumerate(ranking, start=1):
            fused[chunk_key] = fused.get(chunk_key, 0.0) + 1.0 / (RRF_K + rank)
            chosen.setdefault(chunk_key, hit)
    best_first = sorted(chosen, key=fused.__getitem__, reverse=True)
    return [chosen[chunk_key] for chunk_key in best_first[:limit]]


def _place(kb: Searchable) -> tuple[str, tuple[object, str]]:
    """A base's score space (equal for bases whose scores can be compared directly),
    and where it keeps its chunks.

    A component is known by its class and parameters; one that cannot
    describe itself (an AgentScope-style model of any class) only by itself.
    """
    from ...rag import RemoteKnowledgeBase  # imported when searching, as the bases are

    if isinstance(kb, RemoteKnowledgeBase):
        return json.dumps(["remote", kb.url, kb.name]), (kb.url, kb.name)
    space = json.dumps([_identity(kb.embedding_model), _identity(kb.vector_store)], default=str)
    return space, (id(kb.vector_store), kb.collection)


def _identity(component: object) -> object:
    describe = getattr(component, "describe", None)
    if callable(describe):
        return json.dumps(describe(), sort_keys=True, default=str)
    return f"{type(component).__qualname__}@{id(component):x}"
