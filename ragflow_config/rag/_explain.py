"""Why a hit ranks where it does: the explain record ``search(..., explain=True)`` attaches.

A hit's explain names what each stage of retrieval saw: the dense side's
rank and score, the lexical side's rank and BM25 score with the matched
analysed terms and their weights, the fusion of a hybrid search, the
reranker's score and its rank before and after, and the ``metadata_filter``
in force. Ranks count from 1 within one query's ranking on that side.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ._document import VectorSearchResult


class _Record(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TermMatch(_Record):
    """One analysed query term the chunk holds; ``contribution`` sums to the BM25 score."""

    term: str = Field(description="The analysed term (lowercased, stop words out, stemmed).")
    query_weight: float = Field(description="Its IDF in the knowledge base's scope x its count.")
    document_weight: float = Field(description="BM25's document-side weight in this chunk.")
    contribution: float = Field(description="query_weight x document_weight.")


class DenseExplain(_Record):
    """The hit on the dense (embedding similarity) side."""

    rank: int | None = Field(
        description="Its place in the dense ranking; null when the dense side did not return it."
    )
    score: float | None = Field(description="The store's similarity; null when not returned.")


class LexicalExplain(_Record):
    """The hit on the lexical (BM25) side."""

    rank: int | None = Field(
        description="Its place in the lexical ranking; null when the lexical side did not "
        "return it (past its candidates, or no term in common)."
    )
    score: float = Field(description="Its BM25 score (the sum of the terms' contributions).")
    terms: list[TermMatch] = Field(description="The matched terms, largest contribution first.")


class FusionExplain(_Record):
    """How a hybrid search combined the two sides."""

    method: Literal["rrf", "weighted"]
    score: float = Field(description="The fused score, the hit's retrieval score.")


class RerankExplain(_Record):
    """The reranker's view of a hit among its candidates."""

    reranker: str = Field(description="The `rerankers` entry that reordered the candidates.")
    score: float | None = Field(description="Its score; null for a chunk it cannot read.")
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


class ExplainedHit(VectorSearchResult):
    """A hit with its explain: what ``search(..., explain=True)`` returns."""

    explain: HitExplain
