"""``group_by: document`` and pseudo-relevance feedback on Elasticsearch and MongoDB, at the wire.

No server runs here. A ``KnowledgeBase`` searches through the real store and
its official client; the fake server answers each search with scripted chunk
hits. The tests read back the requests the fake really received (how many
chunks each side asked for, the second search's query vector or term
weights, the filter on every request) and the hits the knowledge base
returned, all worked out here by hand. tests/backends/test_grouping_feedback.py
runs the same options on real stores (Qdrant, Milvus Lite, pgvector).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Literal

import pytest
from _table_model import TableModel

from ragflow_config.rag import KnowledgeBase, RetrievalSettings, VectorSearchResult
from ragflow_config.rag._analyzer import Analyzer
from ragflow_config.rag._stores._pointer import POINTER_REGISTRY
from ragflow_config.rag._stores.base import VectorStoreBase
from ragflow_config.rag._stores.elasticsearch import index_mappings

from .conftest import es_store, make_record, mongo_store
from .fake_elasticsearch import FakeElasticsearch, Reply, Request, not_found
from .fake_mongod import FakeMongod, cursor_reply
from .test_elasticsearch import hit, hits, term
from .test_mongodb import is_index_listing, vector_index

QUERY = "aspirin fever"
QUERY_VECTOR = [1.0, 0.0, 0.0]
TENANT = {"tenant": "t1"}  # every knowledge base's metadata_filter
ANALYZER = Analyzer(RetrievalSettings().analyzer)  # the knowledge bases' analyzer settings


def term_id(word: str) -> int:
    return ANALYZER.term_id(word)


Hit = tuple[str, int, float]  # document id, chunk index, score (cosine, or BM25)


@dataclass
class Script:
    """What the fake answers: each dense and lexical search in turn, the rest from tables."""

    dense: list[list[Hit]] = field(default_factory=list)
    lexical: list[list[Hit]] = field(default_factory=list)
    total: int = 0  # chunks in scope, for term counts
    holding: dict[int, int] = field(default_factory=dict)  # chunks in scope holding a term
    vectors: dict[str, dict[int, list[float]]] = field(default_factory=dict)  # stored vectors
    texts: dict[str, str] = field(default_factory=dict)  # a document's chunks' text

    def chunk(self, document_id: str, chunk_index: int) -> dict[str, Any]:
        text = self.texts.get(document_id)
        record = make_record(document_id, chunk_index, TENANT, text=text)
        return record.chunk.model_dump(mode="json")


@dataclass
class Seen:
    """A search request the fake received, read back in the tests' terms."""

    kind: Literal["dense", "lexical", "counts", "vectors"]
    scope: list[dict[str, Any]]  # the store's clauses for the metadata filter
    size: int = 0  # chunks asked for (dense, lexical)
    vector: list[float] = field(default_factory=list)  # dense
    weights: dict[int, float] = field(default_factory=dict)  # lexical: term id -> weight
    terms: list[int] = field(default_factory=list)  # counts
    document_id: str = ""  # vectors


class Wire(ABC):
    """A fake server answering a store's searches from a ``Script``, and what it was asked."""

    tenant: list[dict[str, Any]]  # TENANT as the store's filter clauses

    def __init__(self) -> None:
        self.script = Script()

    @abstractmethod
    def store(self) -> VectorStoreBase: ...

    @abstractmethod
    def seen(self) -> list[Seen]:
        """The searches received since ``answer``, in order (not the setup's reads)."""

    @abstractmethod
    def answer(self, script: Script) -> None:
        """Answer from ``script`` from now on, forgetting the requests received so far."""


class ElasticsearchWire(Wire):
    tenant = [term(["tenant"], "string", "t1")]

    def __init__(self, server: FakeElasticsearch) -> None:
        super().__init__()
        self.server = server
        server.respond = self._respond

    def store(self) -> VectorStoreBase:
        return es_store(self.server)

    def answer(self, script: Script) -> None:
        self.script = script
        del self.server.requests[:]

    def seen(self) -> list[Seen]:
        return [es_seen(r) for r in self.server.requests if r.path == "/docs/_search"]

    def _respond(self, request: Request) -> Reply:
        index, _, rest = request.path.strip("/").partition("/")
        if index == POINTER_REGISTRY:
            return not_found(index)  # never rebuilt: the knowledge base reads "docs"
        if rest == "_mapping":
            return 200, {"docs": {"mappings": index_mappings(3, "cosine", lexical=True)}}
        seen, script = es_seen(request), self.script
        if seen.kind in {"dense", "lexical"}:
            dense = seen.kind == "dense"
            found = (script.dense if dense else script.lexical).pop(0)
            return hits(
                *(
                    # ES's _score of a cosine is (1 + cosine) / 2
                    hit(d, i, (1 + s) / 2 if dense else s, text=script.texts.get(d), **TENANT)
                    for d, i, s in found
                )
            )
        if seen.kind == "counts":
            buckets = {str(t): {"doc_count": script.holding.get(t, 0)} for t in seen.terms}
            return 200, {
                "hits": {"total": {"value": script.total, "relation": "eq"}, "hits": []},
                "aggregations": {"holding": {"buckets": buckets}},
            }
        document = seen.document_id
        return hits(
            *(
                {
                    **hit(document, i, 1.0),
                    "_source": {"chunk": script.chunk(document, i), "vector": v},
                }
                for i, v in script.vectors.get(document, {}).items()
            )
        )


def es_seen(request: Request) -> Seen:
    body = request.json()
    if "knn" in body:
        knn = body["knn"]
        assert knn["k"] == body["size"]
        return Seen("dense", knn.get("filter", []), size=knn["k"], vector=knn["query_vector"])
    query = body.get("query", {})
    if "script_score" in query:
        script_score = query["script_score"]
        holding, *scope = script_score["query"]["bool"]["filter"]
        weights = {int(t): w for t, w in script_score["script"]["params"]["weights"].items()}
        assert holding == {"terms": {"term_ids": sorted(weights)}}
        return Seen("lexical", scope, size=body["size"], weights=weights)
    scope = query.get("bool", {}).get("filter", [])
    if body.get("size") == 0:
        counted = body["aggregations"]["holding"]["filters"]["filters"]
        return Seen("counts", scope, terms=[int(t) for t in counted])
    document, *scope = scope
    assert body["_source"] == ["chunk", "vector"]
    return Seen("vectors", scope, document_id=document["term"]["document_id"])


class MongoWire(Wire):
    tenant = [{"chunk.metadata.tenant": {"$eq": "t1"}}]

    def __init__(self, mongod: FakeMongod) -> None:
        super().__init__()
        self.mongod = mongod
        mongod.respond = self._respond

    def store(self) -> VectorStoreBase:
        return mongo_store(self.mongod, filter_fields=["tenant"])

    def answer(self, script: Script) -> None:
        self.script = script
        self.mongod.commands.clear()

    def seen(self) -> list[Seen]:
        found = (mongo_seen(name, command) for name, command in self.mongod.commands)
        return [seen for seen in found if seen is not None]

    def _respond(self, name: str, command: dict[str, Any]) -> dict[str, Any] | None:
        if name == "listCollections":
            return cursor_reply(command, [{"name": "docs", "type": "collection"}])
        if is_index_listing(name, command):
            return cursor_reply(command, [vector_index("READY", "chunk.metadata.tenant")])
        if name == "listIndexes":
            found = [{"v": 2, "key": {"terms.t": 1}, "name": "terms.t_1"}]
            return cursor_reply(command, found)
        seen, script = mongo_seen(name, command), self.script
        if seen is None:
            return None  # the pointer registry's find: never rebuilt, no pointer
        if seen.kind in {"dense", "lexical"}:
            dense = seen.kind == "dense"
            found = (script.dense if dense else script.lexical).pop(0)
            documents = [
                # vectorSearchScore of a cosine is (1 + cosine) / 2
                {
                    "document_id": d,
                    "chunk": script.chunk(d, i),
                    "score": (1 + s) / 2 if dense else s,
                }
                for d, i, s in found
            ]
            return cursor_reply(command, documents)
        if seen.kind == "counts":
            held = [{"_id": t, "n": script.holding[t]} for t in seen.terms if t in script.holding]
            return cursor_reply(command, [{"total": [{"n": script.total}], "holding": held}])
        stored = script.vectors.get(seen.document_id, {})
        documents = [
            {"chunk": script.chunk(seen.document_id, i), "vector": vector}
            for i, vector in stored.items()
        ]
        return cursor_reply(command, documents)


def mongo_seen(name: str, command: dict[str, Any]) -> Seen | None:
    if name == "find" and command["find"] == "docs":
        document, *scope = command["filter"]["$and"]
        assert command["projection"] == {"_id": 0, "chunk": 1, "vector": 1}
        return Seen("vectors", scope, document_id=document["document_id"]["$eq"])
    if name != "aggregate" or command["aggregate"] != "docs" or is_index_listing(name, command):
        return None
    pipeline = command["pipeline"]
    if "$vectorSearch" in pipeline[0]:
        stage = pipeline[0]["$vectorSearch"]
        scope = stage.get("filter", {}).get("$and", [])
        return Seen("dense", scope, size=stage["limit"], vector=stage["queryVector"])
    if "$facet" in pipeline[-1]:
        scope = pipeline[0]["$match"]["$and"] if len(pipeline) == 2 else []
        counted = pipeline[-1]["$facet"]["holding"][0]["$match"]["terms.t"]["$in"]
        return Seen("counts", scope, terms=counted)
    match, project, _, limit = pipeline
    holding, *scope = match["$match"]["$and"]
    ids = holding["terms.t"]["$in"]
    query_weight = project["$project"]["score"]["$sum"]["$map"]["in"]["$multiply"][1]
    in_order = query_weight["$arrayElemAt"][0]
    return Seen(
        "lexical", scope, size=limit["$limit"], weights=dict(zip(ids, in_order, strict=True))
    )


@pytest.fixture(params=["elasticsearch", "mongodb"])
def wire(request: pytest.FixtureRequest, es_server: FakeElasticsearch, mongod: FakeMongod) -> Wire:
    return ElasticsearchWire(es_server) if request.param == "elasticsearch" else MongoWire(mongod)


def knowledge_base(store: VectorStoreBase, **retrieval: Any) -> KnowledgeBase:
    return KnowledgeBase(
        name="kb",
        description="",
        embedding_model=TableModel({QUERY: QUERY_VECTOR}),
        vector_store=store,
        collection="docs",
        metadata_filter=TENANT,
        retrieval=RetrievalSettings.model_validate(retrieval),
    )


def ranked(found: list[VectorSearchResult]) -> list[tuple[str, int]]:
    return [(hit.document_id, hit.chunk.chunk_index) for hit in found]


def scored(found: list[VectorSearchResult]) -> Any:
    return pytest.approx([hit.score for hit in found], abs=1e-12)


def lucene_idf(total: int, holding: int) -> float:
    return math.log(1 + (total - holding + 0.5) / (holding + 0.5))


# --- group_by: document -------------------------------------------------------------

# Chunk hits as the store ranks them, several chunks a document.
DENSE_CHUNKS = [("B", 0, 0.95), ("A", 0, 0.9), ("A", 1, 0.8), ("C", 0, 0.5), ("E", 0, 0.45)]
DENSE_CHUNKS += [("C", 1, 0.4)]
LEXICAL_CHUNKS = [("A", 1, 4.0), ("C", 0, 3.5), ("B", 0, 3.0), ("A", 0, 2.5), ("B", 1, 2.0)]
LEXICAL_CHUNKS += [("C", 1, 1.0)]
# 7 chunks in scope; aspirin in 3 of them, fever in 2.
TOTAL, HOLDING = 7, {term_id("aspirin"): 3, term_id("fever"): 2}
GROUPING = {"group_by": "document", "chunks_per_document": 2}


@pytest.mark.parametrize(
    ("aggregate", "expected", "scores"),
    [
        # Each document's best chunk; E (0.45) is the 4th document, past top_k.
        ("max", [("B", 0), ("A", 0), ("C", 0)], [0.95, 0.9, 0.5]),
        # A: 0.9 + 0.8; C: 0.5 + 0.4; B has one chunk.
        ("sum_top_2", [("A", 0), ("B", 0), ("C", 0)], [1.7, 0.95, 0.9]),
    ],
)
async def test_the_dense_side_asks_for_chunks_per_document_and_groups_them(
    wire: Wire, aggregate: str, expected: list[tuple[str, int]], scores: list[float]
) -> None:
    async with wire.store() as store:
        kb = knowledge_base(store, **GROUPING, aggregate=aggregate)
        wire.answer(Script(dense=[DENSE_CHUNKS]))
        found = await kb.search([QUERY], top_k=3)

    (search,) = wire.seen()
    assert (search.kind, search.size, search.scope) == ("dense", 3 * 2, wire.tenant)
    assert ranked(found) == expected
    assert scored(found) == scores


@pytest.mark.parametrize(
    ("aggregate", "expected", "scores"),
    [
        # A's best lexical chunk is A1 (its best dense one is A0).
        ("max", [("A", 1), ("C", 0), ("B", 0)], [4.0, 3.5, 3.0]),
        ("sum_top_2", [("A", 1), ("B", 0), ("C", 0)], [6.5, 5.0, 4.5]),
    ],
)
async def test_the_lexical_side_asks_for_chunks_per_document_and_groups_them(
    wire: Wire, aggregate: str, expected: list[tuple[str, int]], scores: list[float]
) -> None:
    async with wire.store() as store:
        kb = knowledge_base(store, mode="lexical", **GROUPING, aggregate=aggregate)
        wire.answer(Script(lexical=[LEXICAL_CHUNKS], total=TOTAL, holding=HOLDING))
        found = await kb.search([QUERY], top_k=3)

    counts, search = wire.seen()
    assert (counts.kind, search.kind, search.size) == ("counts", "lexical", 3 * 2)
    assert counts.scope == search.scope == wire.tenant
    assert ranked(found) == expected
    assert scored(found) == scores


async def test_hybrid_fuses_documents_not_chunks(wire: Wire) -> None:
    async with wire.store() as store:
        kb = knowledge_base(
            store, mode="hybrid", candidates=3, fusion={"method": "rrf"}, **GROUPING
        )
        script = Script(
            dense=[DENSE_CHUNKS], lexical=[LEXICAL_CHUNKS], total=TOTAL, holding=HOLDING
        )
        wire.answer(script)
        found = await kb.search([QUERY], top_k=3)

    sides = {seen.kind: seen.size for seen in wire.seen() if seen.kind != "counts"}
    assert sides == {"dense": 3 * 2, "lexical": 3 * 2}
    # Documents by rank: dense B, A, C (E past candidates); lexical A, C, B. A is one
    # hit carrying the dense side's chunk A0, not A0 and A1 apart.
    assert ranked(found) == [("A", 0), ("B", 0), ("C", 0)]
    assert scored(found) == [1 / 62 + 1 / 61, 1 / 61 + 1 / 63, 1 / 63 + 1 / 62]


# --- feedback ---------------------------------------------------------------------


async def test_rocchio_searches_again_with_the_mean_of_the_first_hits_vectors(
    wire: Wire,
) -> None:
    first = [("X", 1, 0.8), ("Z", 0, 0.6), ("Y", 0, 0.28)]
    second = [("X", 1, 0.9), ("Y", 0, 0.57), ("Z", 0, 0.32)]
    vectors = {
        "X": {0: [0.0, 0.0, 1.0], 1: [0.8, 0.6, 0.0]},  # the hit is X's chunk 1
        "Y": {0: [0.28, 0.96, 0.0]},
        "Z": {0: [0.6, -0.8, 0.0]},
    }
    feedback = {"rm3": None, "rocchio": {"fb_docs": 2, "weight": 0.5}}
    async with wire.store() as store:
        kb = knowledge_base(store, feedback=feedback)
        wire.answer(Script(dense=[first, second], vectors=vectors))
        found = await kb.search([QUERY], top_k=3)

    search, *reads, again = wire.seen()
    assert [search.kind, *(r.kind for r in reads), again.kind] == [
        "dense",
        *["vectors"] * 2,
        "dense",
    ]
    assert search.vector == QUERY_VECTOR
    # The first two hits' documents, read concurrently, each within the tenant's scope.
    assert sorted(r.document_id for r in reads) == ["X", "Z"]
    assert all(seen.scope == wire.tenant for seen in [search, *reads, again])
    # [1, 0, 0] + 0.5 x mean(X1 [0.8, 0.6, 0], Z0 [0.6, -0.8, 0]) = [1.35, -0.05, 0].
    assert again.vector == pytest.approx([1.35, -0.05, 0.0], abs=1e-12)
    assert again.size == search.size == 3
    assert ranked(found) == [("X", 1), ("Y", 0), ("Z", 0)]  # the second search's ranking
    assert scored(found) == [0.9, 0.57, 0.32]


async def test_rm3_searches_again_with_the_expanded_terms_weighted(wire: Wire) -> None:
    aspirin, fever, relief, dose, tablet = map(
        term_id, ["aspirin", "fever", "relief", "dose", "tablet"]
    )
    texts = {"d1": "aspirin fever relief", "d2": "aspirin fever dose", "d3": "relief dose tablets"}
    first = [("d1", 0, 3.0), ("d2", 0, 1.0), ("d3", 0, 0.5)]
    second = [("d2", 0, 2.0), ("d1", 0, 1.8), ("d3", 0, 0.4)]
    holding = {aspirin: 2, fever: 3, relief: 1, dose: 2, tablet: 1}
    feedback = {"rm3": {"fb_docs": 2, "fb_terms": 3, "original_weight": 0.5}, "rocchio": None}
    async with wire.store() as store:
        kb = knowledge_base(store, mode="lexical", feedback=feedback)
        wire.answer(Script(lexical=[first, second], total=5, holding=holding, texts=texts))
        found = await kb.search([QUERY], top_k=3)

    counts, search, counts_again, again = wire.seen()
    assert [s.kind for s in (counts, search, counts_again, again)] == ["counts", "lexical"] * 2
    assert all(seen.scope == wire.tenant for seen in wire.seen())
    idf = {t: lucene_idf(5, n) for t, n in holding.items()}
    assert counts.terms == sorted([aspirin, fever])
    assert search.weights == pytest.approx({aspirin: idf[aspirin], fever: idf[fever]})
    # The relevance model of d1 (score 3) and d2 (score 1), 3 terms each: aspirin and
    # fever 3/3 + 1/3, relief 3/3, dose 1/3. Keep 3 (mass 11/3): 4/11, 4/11, 3/11.
    # Half and half with the query (aspirin 1/2, fever 1/2): 19/44, 19/44, 6/44.
    assert counts_again.terms == sorted([aspirin, fever, relief])
    assert again.weights == pytest.approx(
        {
            aspirin: 19 / 44 * idf[aspirin],
            fever: 19 / 44 * idf[fever],
            relief: 6 / 44 * idf[relief],
        }
    )
    assert again.size == search.size == 3
    assert ranked(found) == [("d2", 0), ("d1", 0), ("d3", 0)]  # the second search's ranking
    assert scored(found) == [2.0, 1.8, 0.4]


async def test_feedback_on_grouped_hybrid_searches_within_the_tenant_only(wire: Wire) -> None:
    feedback = {"rm3": {"fb_docs": 1}, "rocchio": {"fb_docs": 1}}
    script = Script(
        dense=[DENSE_CHUNKS[:4], [("A", 0, 0.92), ("B", 0, 0.9), ("A", 1, 0.7), ("D", 0, 0.6)]],
        lexical=[LEXICAL_CHUNKS[:4], [("C", 0, 5.0), ("A", 1, 4.0), ("C", 1, 1.0), ("B", 0, 0.5)]],
        total=TOTAL,
        holding=HOLDING,
        vectors={"B": {0: [0.6, 0.8, 0.0]}},
        texts={"A": "aspirin fever fever"},
    )
    async with wire.store() as store:
        kb = knowledge_base(
            store,
            mode="hybrid",
            candidates=2,
            fusion={"method": "rrf"},
            feedback=feedback,
            **GROUPING,
        )
        wire.answer(script)
        found = await kb.search([QUERY], top_k=2)

    seen = wire.seen()
    kinds = ["counts", "lexical", "counts", "lexical", "dense", "vectors", "dense"]
    assert sorted(s.kind for s in seen) == sorted(kinds)
    assert all(s.scope == wire.tenant for s in seen)  # the feedback round's too
    # Both searches of both sides: 2 documents wanted, 2 chunks each.
    assert [s.size for s in seen if s.kind in {"dense", "lexical"}] == [2 * 2] * 4
    # Rocchio reads the first document's best chunk (B0): [1, 0, 0] + 1.0 x [0.6, 0.8, 0].
    (read,) = (s for s in seen if s.kind == "vectors")
    assert read.document_id == "B"
    _, again = (s for s in seen if s.kind == "dense")
    assert again.vector == pytest.approx([1.6, 0.8, 0.0], abs=1e-12)
    # The second searches grouped: dense A (A0), B (D is a 3rd document); lexical C, A.
    # RRF over documents: A 1/61 + 1/62 (1st dense, 2nd lexical), C 1/61, B 1/62.
    assert ranked(found) == [("A", 0), ("C", 0)]
    assert scored(found) == [1 / 61 + 1 / 62, 1 / 61]
