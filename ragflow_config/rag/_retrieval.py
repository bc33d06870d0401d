"""How a knowledge base retrieves: dense, lexical (BM25) or both, fused.

One meaning on every store. The project analyses text (``_analyzer``) and
gives each chunk BM25's document-side weights for its terms,
``tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avg_length))``, stored
beside its dense vector as a sparse vector. A query's terms are weighted by
their IDF, ``ln(1 + (N - n + 0.5) / (n + 0.5))`` (Lucene's), where ``N`` is
the number of chunks in the knowledge base's scope and ``n`` those holding
the term, both counted by the store at query time. The store then ranks
chunks by the inner product of the two sparse vectors, which is exactly the
chunk's BM25 score. Only the inner product runs in the store, so every store
that can hold sparse vectors gives the same scores.

``avg_length`` is a setting, not the corpus's running mean, so a chunk's
weights never change when other documents come and go; set it near the mean
number of terms of a chunk (after stop words).

Two query-time options change what a side returns, the same way on every
store since both work on the chunks the store returned: ``group_by:
document`` (``group_documents``: one hit per document, before fusion) and
``feedback`` (a second search per side, with RM3's terms or Rocchio's vector).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .._document import VectorSearchResult
from ._analyzer import AnalyzerSettings


class _Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Bm25Settings(_Settings):
    """BM25's document-side constants."""

    k1: float = Field(default=1.2, ge=0, description="Term-frequency saturation.")
    b: float = Field(default=0.75, ge=0, le=1, description="Length normalisation, 0 to 1.")
    avg_length: float = Field(
        default=100.0,
        gt=0,
        description="The length (in terms, after stop words) a chunk is normalised against; "
        "set it near your chunks' mean. Fixed, so stored weights never go stale.",
    )


class FusionSettings(_Settings):
    """How a hybrid search combines its dense and lexical rankings."""

    # `weighted` at 0.7 dense / 0.3 lexical: of the fusions measured on five judged
    # collections (docs/retrieval-evidence.md), the only one that beat dense on nDCG@10 on
    # every one (significantly on three) and lost significantly on none. Equal weights gain
    # more on three of them but lose on MED; `rrf` lost MAP on MED significantly.
    method: Literal["rrf", "weighted"] = Field(
        default="weighted",
        description="`weighted`: sum of weight x score, each side's scores min-max normalised "
        "so that its first `candidates` hits span [0, 1] (hits after them fall below 0). "
        "`rrf`: sum of weight / (k + rank) over both rankings.",
    )
    k: int = Field(default=60, ge=0, description="RRF's rank constant.")
    dense_weight: float = Field(
        default=0.7, ge=0, description="Weight of the dense side (default: 0.7; 1 with `rrf`)."
    )
    lexical_weight: float = Field(
        default=0.3, ge=0, description="Weight of the lexical side (default: 0.3; 1 with `rrf`)."
    )

    @model_validator(mode="before")
    @classmethod
    def _rrf_weights(cls, data: Any) -> Any:
        """`rrf`'s weights default to 1 each, plain RRF; the field defaults are `weighted`'s."""
        if isinstance(data, Mapping) and data.get("method") == "rrf":
            return {"dense_weight": 1.0, "lexical_weight": 1.0, **data}
        return data


class RerankSettings(_Settings):
    """Which reranker reorders a search's first candidates."""

    reranker: str = Field(min_length=1, description="The name of an entry of `rerankers`.")
    candidates: int = Field(
        default=50,
        ge=1,
        le=10_000,
        description="Hits the reranker reorders (at least top_k are retrieved); the hits "
        "after them follow in retrieval order.",
    )


class Rm3Settings(_Settings):
    """RM3 on the lexical side (``rm3_terms``)."""

    fb_docs: int = Field(default=10, ge=1, le=1000, description="First hits read for terms.")
    fb_terms: int = Field(default=10, ge=1, le=1000, description="Expansion terms kept.")
    original_weight: float = Field(
        default=0.5, ge=0, le=1, description="The original query's share of the new query."
    )


class RocchioSettings(_Settings):
    """Rocchio on the dense side (``rocchio_vector``)."""

    fb_docs: int = Field(default=3, ge=1, le=1000, description="First hits whose vectors count.")
    weight: float = Field(
        default=1.0, ge=0, description="The weight of their mean, added to the query vector."
    )


class FeedbackSettings(_Settings):
    """Pseudo-relevance feedback, per side; a side the mode lacks ignores its entry."""

    rm3: Rm3Settings | None = Field(
        default_factory=Rm3Settings, description="Lexical side; null turns it off."
    )
    rocchio: RocchioSettings | None = Field(
        default_factory=RocchioSettings, description="Dense side; null turns it off."
    )


class RetrievalSettings(_Settings):
    """A knowledge base's retrieval: its mode, lexical analysis and fusion."""

    mode: Literal["dense", "lexical", "hybrid"] = Field(
        default="dense",
        description="`dense`: embedding similarity only (score: the store's similarity). "
        "`lexical`: BM25 over analysed terms (score: BM25). `hybrid`: both, fused (score: "
        "the fused score).",
    )
    analyzer: AnalyzerSettings = Field(default_factory=AnalyzerSettings)
    bm25: Bm25Settings = Field(default_factory=Bm25Settings)
    fusion: FusionSettings = Field(default_factory=FusionSettings)
    candidates: int = Field(
        default=100,
        ge=1,
        le=10_000,
        description="Hits each side contributes to a hybrid search (at least top_k).",
    )
    rerank: RerankSettings | None = Field(
        default=None,
        description="Reorder the first hits with a reranker (query time only: not part of "
        "the fingerprint).",
    )
    group_by: Literal["chunk", "document"] = Field(
        default="chunk",
        description="`chunk`: every chunk is a hit. `document`: one hit per document, on each "
        "side before fusion, carrying its best chunk and scored by `aggregate` over the chunks "
        "the side found (query time only: not part of the fingerprint).",
    )
    aggregate: Literal["max", "sum_top_2"] = Field(
        default="max",
        description="With `group_by: document`, a document's score from its chunks' scores: "
        "`max`, its best chunk's; `sum_top_2`, the sum of its two best (a second matching "
        "passage counts; favours documents of several chunks: for documents alike in "
        "length and scores that are never negative).",
    )
    chunks_per_document: int = Field(
        default=5,
        ge=1,
        le=100,
        description="With `group_by: document`, chunks each side fetches per document it "
        "returns: a side wanting N documents asks the store for N x this many chunks.",
    )
    feedback: FeedbackSettings | None = Field(
        default=None,
        description="Pseudo-relevance feedback: each side searches twice, the second time "
        "with a query rebuilt from its first hits (query time only: not part of the "
        "fingerprint). Off unless given.",
    )

    @property
    def lexical(self) -> bool:
        """Whether chunks need a lexical side."""
        return self.mode != "dense"

    def index_settings(self) -> dict[str, object]:
        """What the stored lexical weights depend on (a fingerprint part)."""
        return {
            "analyzer": self.analyzer.model_dump(mode="json"),
            "bm25": self.bm25.model_dump(mode="json"),
        }


def document_weights(counts: dict[int, int], length: int, bm25: Bm25Settings) -> dict[int, float]:
    """BM25's document-side weight of each term of a chunk."""
    norm = bm25.k1 * (1 - bm25.b + bm25.b * length / bm25.avg_length)
    return {term: tf * (bm25.k1 + 1) / (tf + norm) for term, tf in counts.items()}


def idf(total: int, holding: int) -> float:
    """Lucene's BM25 IDF: never negative, however common the term."""
    return math.log(1 + (total - holding + 0.5) / (holding + 0.5))


def query_weights(
    counts: Mapping[int, float], total: int, holding: dict[int, int]
) -> dict[int, float]:
    """Each query term's IDF times its count in the query; terms no chunk holds are left out."""
    return {
        term: count * idf(total, holding[term])
        for term, count in counts.items()
        if holding.get(term, 0) > 0
    }


def ordered(hits: Sequence[VectorSearchResult]) -> list[VectorSearchResult]:
    """Best first; ties by document id and chunk index, so every store gives one order."""
    return sorted(hits, key=lambda h: (-h.score, h.document_id, h.chunk.chunk_index))


HitKey = tuple[str, int | None]


def hit_key(hit: VectorSearchResult, by_document: bool) -> HitKey:
    """What makes two hits one: their chunk, or with ``group_by: document`` their document."""
    return hit.document_id, None if by_document else hit.chunk.chunk_index


def group_documents(
    hits: Sequence[VectorSearchResult], aggregate: Literal["max", "sum_top_2"]
) -> tuple[list[VectorSearchResult], dict[str, list[VectorSearchResult]]]:
    """One hit per document, best first, and each document's chunks among ``hits``, best first.

    A document's hit is its best chunk (ties: the lowest chunk index) scored by
    ``aggregate``. Only ``hits`` count, so every store, given the same chunk
    ranking, groups it alike.
    """
    members: dict[str, list[VectorSearchResult]] = {}
    for hit in ordered(hits):
        members.setdefault(hit.document_id, []).append(hit)
    top = 1 if aggregate == "max" else 2
    grouped = [
        chunks[0].model_copy(update={"score": sum(hit.score for hit in chunks[:top])})
        for chunks in members.values()
    ]
    return ordered(grouped), members


def rm3_terms(
    query: Sequence[str], feedback: Sequence[tuple[Sequence[str], float]], rm3: Rm3Settings
) -> dict[str, float]:
    """RM3's query: analysed terms and their weights, summing to 1.

    ``feedback`` is the first hits' analysed terms with their scores. As in
    Anserini's RM3, the relevance model weighs each term by
    ``sum over hits of score x tf / length``, keeps the ``fb_terms`` heaviest
    (ties: alphabetical), normalised to sum 1; the query's own terms, each
    ``count / length``, are mixed in at ``original_weight``.
    """
    model: dict[str, float] = {}
    for terms, score in feedback:
        if not terms:
            continue
        for term, count in Counter(terms).items():
            model[term] = model.get(term, 0.0) + score * count / len(terms)
    kept = sorted(model.items(), key=lambda item: (-item[1], item[0]))[: rm3.fb_terms]
    mass = sum(weight for _, weight in kept)
    mixed = {term: (1 - rm3.original_weight) * weight / mass for term, weight in kept if mass > 0}
    for term, count in Counter(query).items():
        mixed[term] = mixed.get(term, 0.0) + rm3.original_weight * count / len(query)
    return mixed


def rocchio_vector(
    query: Sequence[float], vectors: Sequence[Sequence[float]], weight: float
) -> list[float]:
    """The query vector plus ``weight`` times the mean of ``vectors`` (Rocchio, no negatives)."""
    if not vectors:
        return list(query)
    mean = [sum(column) / len(vectors) for column in zip(*vectors, strict=True)]
    return [q + weight * m for q, m in zip(query, mean, strict=True)]


def fuse(
    dense: Sequence[VectorSearchResult],
    lexical: Sequence[VectorSearchResult],
    fusion: FusionSettings,
    *,
    candidates: int,
    by_document: bool = False,
) -> list[VectorSearchResult]:
    """One ranking from two, each hit's score replaced by its fused score.

    ``by_document`` fuses documents (``group_by: document``): a document is one
    hit on both sides, whichever chunk each carries; the fused hit carries the
    dense side's.

    ``weighted`` normalises each side by the best and the worst of its first
    ``candidates`` hits, however many it returned, so a search for more hits
    than ``candidates`` (``eval``'s deep ranking) keeps the scale, and so the
    order, of the search for fewer: its extra hits score below 0 rather than
    squeezing every other hit towards 1.
    """
    sides = ((ordered(dense), fusion.dense_weight), (ordered(lexical), fusion.lexical_weight))
    scores: dict[HitKey, float] = {}
    hits: dict[HitKey, VectorSearchResult] = {}
    for ranking, weight in sides:
        if not ranking:
            continue
        top, bottom = ranking[0].score, ranking[:candidates][-1].score
        for rank, hit in enumerate(ranking, start=1):
            key = hit_key(hit, by_document)
            hits.setdefault(key, hit)
            if fusion.method == "rrf":
                part = weight / (fusion.k + rank)
            else:
                part = weight * ((hit.score - bottom) / (top - bottom) if top > bottom else 1.0)
            scores[key] = scores.get(key, 0.0) + part
    return ordered([hit.model_copy(update={"score": scores[key]}) for key, hit in hits.items()])
