"""Why a hit ranks where it does: the explain record ``search(..., explain=True)`` attaches.

A hit's explain names what each stage of retrieval saw: the dense side's
rank and score, the lexical side's rank and BM25 score with the matched
analysed terms and their weights, the fusion of a hybrid search, the
reranker's score and its rank before and after, and the ``metadata_filter``
in force. Ranks count from 1 within one query's ranking on that side.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from .._document import VectorSearchResult
from ..message import TextBlock
from ._analyzer import Analyzer
from ._retrieval import HitKey, RetrievalSettings, document_weights, hit_key, ordered


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TermMatch(_Record):
    """One analysed query term the chunk holds; ``contribution`` sums to the BM25 score."""

    term: str = Field(description="The analysed term (lowercased, stop words out, stemmed).")
    query_weight: float = Field(description="Its IDF in the knowledge base's scope x its count.")
    document_weight: float = Field(description="BM25's document-side weight in this chunk.")
    contribution: float = Field(description="query_weight x document_weight.")


class ChunkScore(_Record):
    """One chunk a side found of a document (``group_by: document``)."""

    chunk_index: int
    score: float = Field(description="The chunk's own score on that side.")


class DenseExplain(_Record):
    """The hit on the dense (embedding similarity) side."""

    rank: int | None = Field(
        description="Its place in the dense ranking; null when the dense side did not return it."
    )
    score: float | None = Field(description="The store's similarity; null when not returned.")
    chunks: list[ChunkScore] | None = Field(
        default=None,
        description="With `group_by: document`: the document's chunks this side found, best "
        "first, that its score aggregates.",
    )


class LexicalExplain(_Record):
    """The hit on the lexical (BM25) side."""

    rank: int | None = Field(
        description="Its place in the lexical ranking; null when the lexical side did not "
        "return it (past its candidates, or no term in common)."
    )
    score: float = Field(description="Its BM25 score (the sum of the terms' contributions).")
    terms: list[TermMatch] = Field(
        description="The matched terms of the chunk the hit carries, largest contribution first."
    )
    chunks: list[ChunkScore] | None = Field(
        default=None,
        description="With `group_by: document`: the document's chunks this side found, best "
        "first, that its score aggregates.",
    )


class FusionExplain(_Record):
    """How a hybrid search combined the two sides."""

    method: Literal["rrf", "weighted"]
    score: float = Field(description="The fused score, the hit's retrieval score.")


class RerankExplain(_Record):
    """The reranker's view of a hit among its candidates."""

    reranker: str = Field(description="The `rerankers` entry that reordered the candidates.")
    score: float = Field(description="Its score (a chunk it cannot read keeps its own).")
    rank_before: int = Field(description="The hit's place in the retrieval ranking.")
    rank_after: int = Field(description="Its place after reranking.")


class HitExplain(_Record):
    """Everything that placed one hit."""

    mode: Literal["dense", "lexical", "hybrid"]
    query: str = Field(description="The query whose ranking gave the hit its best score.")
    retrieval_score: float = Field(description="The score before any reranking.")
    dense: DenseExplain | None = Field(default=None, description="Absent in lexical mode.")
    lexical: LexicalExplain | None = Field(default=None, description="Absent in dense mode.")
    fusion: FusionExplain | None = Field(default=None, description="Hybrid mode only.")
    rerank: RerankExplain | None = Field(
        default=None, description="Only for the candidates a reranker reordered."
    )
    metadata_filter: dict[str, Any] | None = Field(
        description="The filter in force: the knowledge base's own with the search's `where`."
    )

    def summary(self) -> str:
        """One line naming each stage's rank and score, and the matched terms."""
        parts = []
        if self.dense is not None:
            parts.append(
                f"dense {_placed(self.dense.rank, self.dense.score)}{_chunks(self.dense.chunks)}"
            )
        if self.lexical is not None:
            terms = ", ".join(f"{m.term} {m.contribution:.3f}" for m in self.lexical.terms)
            placed = _placed(self.lexical.rank, self.lexical.score)
            parts.append(
                f"lexical {placed}{_chunks(self.lexical.chunks)}"
                + (f" [{terms}]" if terms else " [no term matched]")
            )
        if self.fusion is not None:
            parts.append(f"{self.fusion.method} {self.fusion.score:.4f}")
        if self.rerank is not None:
            rerank = self.rerank
            parts.append(
                f"rerank {rerank.reranker} {rerank.score:.4f} "
                f"(#{rerank.rank_before} -> #{rerank.rank_after})"
            )
        if self.metadata_filter:
            parts.append(f"filter {json.dumps(self.metadata_filter, ensure_ascii=False)}")
        return "; ".join(parts)


def _chunks(chunks: list[ChunkScore] | None) -> str:
    """`` chunks 1 (0.8123), 0 (0.7011)``: a grouped document's chunks on one side."""
    if not chunks:
        return ""
    return " chunks " + ", ".join(f"{c.chunk_index} ({c.score:.4f})" for c in chunks)


def _placed(rank: int | None, score: float | None) -> str:
    """``#2 (0.6019)``, or what a side that did not return the hit can still say."""
    if rank is None:
        return "not returned" if score is None else f"not returned ({score:.4f})"
    return f"#{rank} ({score:.4f})"


class ExplainedHit(VectorSearchResult):
    """A hit with its explain: what ``search(..., explain=True)`` returns."""

    explain: HitExplain


@dataclass
class QueryTrace:
    """What one query's retrieval saw, kept only when a search explains its hits."""

    query: str
    ranking: list[VectorSearchResult]
    """The query's retrieval ranking: a side's hits, or both fused."""
    dense: list[VectorSearchResult] | None = None
    lexical: list[VectorSearchResult] | None = None
    weights: dict[int, float] = field(default_factory=dict)
    """The lexical side's query term weights, by term id (RM3's, with feedback)."""
    dense_members: dict[str, list[VectorSearchResult]] | None = None
    lexical_members: dict[str, list[VectorSearchResult]] | None = None
    """With ``group_by: document``, each document's chunks that side found."""


def explain_hits(
    hits: Sequence[VectorSearchResult],
    trace: Sequence[QueryTrace],
    *,
    settings: RetrievalSettings,
    analyzer: Analyzer | None,
    metadata_filter: dict[str, Any] | None,
    reranked: tuple[str, Sequence[VectorSearchResult], Sequence[VectorSearchResult]] | None = None,
) -> list[ExplainedHit]:
    """``hits`` (a search's result) each with its explain, read from ``trace``.

    ``reranked`` is ``(reranker name, candidates before, candidates after)``
    when a reranker reordered the first hits. Nothing here ranks: the hits
    keep their order and scores.
    """
    by_document = settings.group_by == "document"

    def _key(hit: VectorSearchResult) -> HitKey:
        return hit_key(hit, by_document)

    before = {_key(hit): rank for rank, hit in enumerate(reranked[1], 1)} if reranked else {}
    after = {_key(hit): rank for rank, hit in enumerate(reranked[2], 1)} if reranked else {}
    sides = [_Sides(q, _key) for q in trace]
    explained = []
    for hit in hits:
        key = _key(hit)
        found = [(side, side.ranking[key]) for side in sides if key in side.ranking]
        # The query that gave the hit its score: the best, the first of equals (as _best keeps).
        side, retrieved = max(found, key=lambda pair: pair[1].score) if found else (None, hit)
        rerank = None
        if reranked is not None and key in after:
            rerank = RerankExplain(
                reranker=reranked[0],
                score=hit.score,
                rank_before=before[key],
                rank_after=after[key],
            )
        explain = HitExplain(
            mode=settings.mode,
            query=side.trace.query if side else "",
            retrieval_score=retrieved.score,
            dense=side.dense_explain(key) if side else None,
            lexical=side.lexical_explain(hit, analyzer, settings) if side else None,
            fusion=(
                FusionExplain(method=settings.fusion.method, score=retrieved.score)
                if settings.mode == "hybrid"
                else None
            ),
            rerank=rerank,
            metadata_filter=metadata_filter,
        )
        explained.append(ExplainedHit(**dict(hit), explain=explain))
    return explained


class _Sides:
    """One query's trace, indexed by hit: its ranking and each side's ranks."""

    def __init__(self, trace: QueryTrace, key: Callable[[VectorSearchResult], HitKey]) -> None:
        self.trace = trace
        self.key = key
        self.ranking = {key(hit): hit for hit in trace.ranking}
        self.dense = _ranks(trace.dense, key)
        self.lexical = _ranks(trace.lexical, key)

    def dense_explain(self, key: HitKey) -> DenseExplain | None:
        if self.dense is None:
            return None
        rank, hit = self.dense.get(key, (None, None))
        chunks = _members(self.trace.dense_members, key)
        return DenseExplain(rank=rank, score=hit.score if hit else None, chunks=chunks)

    def lexical_explain(
        self, hit: VectorSearchResult, analyzer: Analyzer | None, settings: RetrievalSettings
    ) -> LexicalExplain | None:
        if self.lexical is None or analyzer is None:
            return None
        weights = self.trace.weights
        content = hit.chunk.content
        text = content.text if isinstance(content, TextBlock) else ""
        # The chunk's own terms name every match, RM3's expansion terms included.
        names = {analyzer.term_id(term): term for term in analyzer.terms(text)}
        counts, length = analyzer.term_counts(text)
        document = document_weights(counts, length, settings.bm25)
        terms = sorted(
            (
                TermMatch(
                    term=names[term],
                    query_weight=weights[term],
                    document_weight=document[term],
                    contribution=weights[term] * document[term],
                )
                for term in weights.keys() & document.keys()
            ),
            key=lambda match: (-match.contribution, match.term),
        )
        key = self.key(hit)
        rank, found = self.lexical.get(key, (None, None))
        # A hit the lexical side did not return still has a BM25 score: its terms' sum.
        score = found.score if found else sum(match.contribution for match in terms)
        chunks = _members(self.trace.lexical_members, key)
        return LexicalExplain(rank=rank, score=score, terms=terms, chunks=chunks)


def _ranks(
    hits: list[VectorSearchResult] | None, key: Callable[[VectorSearchResult], HitKey]
) -> dict[HitKey, tuple[int, VectorSearchResult]] | None:
    """Each hit's 1-based rank in a side's ranking, ties ordered as ``fuse`` orders them."""
    if hits is None:
        return None
    return {key(hit): (rank, hit) for rank, hit in enumerate(ordered(hits), 1)}


def _members(
    members: dict[str, list[VectorSearchResult]] | None, key: HitKey
) -> list[ChunkScore] | None:
    """A grouped document's chunks on one side (none found: an empty list)."""
    if members is None:
        return None
    found = members.get(key[0], [])
    return [ChunkScore(chunk_index=hit.chunk.chunk_index, score=hit.score) for hit in found]
