"""``evaluate`` end to end: a real KnowledgeBase (in-memory Qdrant, hashing model), known relevance."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from ragflow_config import EmbeddingError
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.evaluation import JudgedQuery, Judgement, evaluate
from ragflow_config.evaluation._ranking import rank_sources
from ragflow_config.message import DataBlock, TextBlock
from ragflow_config.rag import Chunk, KnowledgeBase, QdrantStore, VectorSearchResult

DOCUMENTS = {
    "cats.txt": ["Cats sleep twelve to sixteen hours a day, mostly in the sun."],
    "kittens.txt": ["Kittens sleep even more hours than grown cats do."],
    "dogs.txt": ["Dogs bark at the postman every morning before breakfast."],
    "parrots.txt": ["Parrots learn words and whistle tunes they hear often."],
    "files.txt": [
        "Reading files: call open() with the path and a mode.",
        "To read a text file line by line, write: for line in f: print(line).",
        "Close the file when done, or use a with statement.",
    ],
}


def chunks(source: str, texts: list[str]) -> list[Chunk]:
    return [
        Chunk(content=TextBlock(text=text), source=source, chunk_index=i, total_chunks=len(texts))
        for i, text in enumerate(texts)
    ]


@pytest.fixture
async def store() -> AsyncIterator[QdrantStore]:
    async with QdrantStore(location=":memory:") as opened:
        yield opened


@pytest.fixture
async def knowledge_base(store: QdrantStore) -> KnowledgeBase:
    kb = KnowledgeBase("pets", "", HashingEmbeddingModel(dimensions=256), store, "pets")
    for source, texts in DOCUMENTS.items():
        await kb.insert_document(chunks(source, texts), document_id=source)
    return kb


QUERIES = [
    # Found in order: cats.txt first, then kittens.txt (the hashing model is lexical).
    JudgedQuery(
        id="cats",
        query="how many hours do cats sleep",
        relevant=[Judgement(source="cats.txt", grade=2), Judgement(source="kittens.txt")],
    ),
    # dogs.txt comes first; parrots.txt shares no word with the query and is not in the top 3.
    JudgedQuery(
        id="dogs",
        query="why do dogs bark at the postman",
        relevant=[Judgement(source="dogs.txt"), Judgement(source="parrots.txt")],
    ),
    # All three chunks of files.txt are the top hits; the source is listed once.
    JudgedQuery(
        id="files",
        query="read a file line by line",
        relevant=[Judgement(source="files.txt", grade=3, passages=["FOR LINE IN F"])],
    ),
    JudgedQuery(id="goldfish", query="what do goldfish remember", relevant=[]),
]


async def test_metrics_of_known_rankings(knowledge_base: KnowledgeBase) -> None:
    result = await evaluate(knowledge_base, QUERIES, k=3)
    rows = {row.id: row for row in result.queries}
    assert [(e.source, e.grade) for e in rows["cats"].ranking] == [
        ("cats.txt", 2),
        ("kittens.txt", 1),
        ("files.txt", 0),
    ]
    assert [(e.source, e.grade) for e in rows["files"].ranking] == [
        ("files.txt", 3),
        ("kittens.txt", 0),
        ("cats.txt", 0),
    ]
    assert rows["dogs"].ranking[0].source == "dogs.txt"
    assert "parrots.txt" not in [e.source for e in rows["dogs"].ranking]

    # cats: recall 2/2, precision 2/3, mrr 1, AP (1/1 + 2/2) / 2 = 1, ideal order so
    # both nDCGs 1, hit 1.
    assert rows["cats"].metrics == pytest.approx(
        {
            "recall": 1,
            "precision": 2 / 3,
            "mrr": 1,
            "map": 1,
            "map_uncut": 1,
            "ndcg": 1,
            "ndcg_exp": 1,
            "hit_rate": 1,
        }
    )
    # dogs: recall 1/2, precision 1/3, mrr 1, AP (1/1) / 2 = 1/2; over the whole ranking
    # parrots.txt comes fifth (last): uncut AP (1/1 + 2/5) / 2 = 0.7; grades 1 so both
    # ndcg = (1/log2 2) / (1/log2 2 + 1/log2 3) = 1 / 1.63093 = 0.61315, hit 1.
    dogs_ndcg = 1 / (1 + 1 / math.log2(3))
    assert rows["dogs"].metrics == pytest.approx(
        {
            "recall": 0.5,
            "precision": 1 / 3,
            "mrr": 1,
            "map": 0.5,
            "map_uncut": 0.7,
            "ndcg": dogs_ndcg,
            "ndcg_exp": dogs_ndcg,
            "hit_rate": 1,
        }
    )
    # files: one relevant source, first: recall 1, precision 1/3, mrr 1, AP 1, nDCG 1, hit 1.
    assert rows["files"].metrics == pytest.approx(
        {
            "recall": 1,
            "precision": 1 / 3,
            "mrr": 1,
            "map": 1,
            "map_uncut": 1,
            "ndcg": 1,
            "ndcg_exp": 1,
            "hit_rate": 1,
        }
    )
    # goldfish: nothing is relevant, so 0 everywhere, and it still counts in the mean.
    assert set(rows["goldfish"].metrics.values()) == {0.0}

    assert (result.k, result.query_count, result.no_relevant_count) == (3, 4, 1)
    assert result.metrics == pytest.approx(
        {
            "recall": (1 + 0.5 + 1 + 0) / 4,  # 0.625
            "precision": (2 / 3 + 1 / 3 + 1 / 3 + 0) / 4,  # 1/3
            "mrr": (1 + 1 + 1 + 0) / 4,  # 0.75
            "map": (1 + 0.5 + 1 + 0) / 4,  # 0.625
            "map_uncut": (1 + 0.7 + 1 + 0) / 4,  # 0.675
            "ndcg": (1 + dogs_ndcg + 1 + 0) / 4,  # 0.65329
            "ndcg_exp": (1 + dogs_ndcg + 1 + 0) / 4,
            "hit_rate": 3 / 4,
        }
    )
    assert result.as_dict()["queries"][0] == {
        "id": "cats",
        "query": "how many hours do cats sleep",
        "relevant_count": 2,
        "metrics": rows["cats"].metrics,
        "ranking": [
            {"source": e.source, "grade": e.grade, "score": e.score} for e in rows["cats"].ranking
        ],
    }


async def test_ties_keep_the_order_search_returned(knowledge_base: KnowledgeBase) -> None:
    query = JudgedQuery(id="g", query="what do goldfish remember", relevant=[])
    result = await evaluate(knowledge_base, [query], k=5)
    ranking = result.queries[0].ranking
    hits = await knowledge_base.search([query.query], top_k=20)
    first_seen = list(dict.fromkeys(hit.chunk.source for hit in hits))
    assert [entry.source for entry in ranking] == first_seen
    tied = [entry.score for entry in ranking[2:]]
    assert len(tied) == 3 and len(set(tied)) == 1  # three sources share one score


async def test_passage_found_in_a_later_chunk_ranks_late(knowledge_base: KnowledgeBase) -> None:
    # files.txt chunk 0 (open() with the path) is the best hit but lacks the passage.
    query = JudgedQuery(
        id="open",
        query="call open with the path and a mode",
        relevant=[Judgement(source="files.txt", passages=["for line in f"])],
    )
    ranking = (await evaluate(knowledge_base, [query], k=5)).queries[0].ranking
    assert ranking[0].source == "files.txt" and ranking[0].grade == 0
    answer = next(rank for rank, e in enumerate(ranking, start=1) if e.grade)
    assert answer > 1
    assert (await evaluate(knowledge_base, [query], k=5)).metrics["mrr"] == 1 / answer


async def test_asks_for_more_hits_when_one_source_fills_them(store: QdrantStore) -> None:
    kb = KnowledgeBase("big", "", HashingEmbeddingModel(dimensions=256), store, "big")
    # 12 chunks of one file outscore the other file; k = 2 first asks for 8 hits.
    await kb.insert_document(
        chunks("big.txt", [f"cats sleep all day, part {i}" for i in range(12)])
    )
    await kb.insert_document(chunks("other.txt", ["cats"]))
    query = JudgedQuery(
        id="q", query="cats sleep all day", relevant=[Judgement(source="other.txt")]
    )
    first_hits = await kb.search([query.query], top_k=8)
    assert {hit.chunk.source for hit in first_hits} == {"big.txt"}
    result = await evaluate(kb, [query], k=2)
    assert [e.source for e in result.queries[0].ranking] == ["big.txt", "other.txt"]
    assert result.metrics["mrr"] == 0.5


async def test_a_small_knowledge_base_gives_a_short_ranking(store: QdrantStore) -> None:
    kb = KnowledgeBase("one", "", HashingEmbeddingModel(dimensions=64), store, "one")
    await kb.insert_document(chunks("only.txt", ["cats"]))
    query = JudgedQuery(id="q", query="cats", relevant=[Judgement(source="only.txt")])
    result = await evaluate(kb, [query], k=4)
    assert [e.source for e in result.queries[0].ranking] == ["only.txt"]
    assert result.metrics["precision"] == 0.25  # 1 relevant / k = 4


async def test_rejects_bad_arguments(knowledge_base: KnowledgeBase) -> None:
    with pytest.raises(ValueError, match="no queries"):
        await evaluate(knowledge_base, [], k=3)
    with pytest.raises(ValueError, match="k must be at least 1"):
        await evaluate(knowledge_base, QUERIES, k=0)
    with pytest.raises(ValueError, match="depth must be at least k = 3, got 2"):
        await evaluate(knowledge_base, QUERIES, k=3, depth=2)
    assert (await evaluate(knowledge_base, QUERIES, k=3, depth=3)).k == 3


class FailingOnBoom(HashingEmbeddingModel):
    """The hashing model, failing for any text that mentions "boom"."""

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        if any(isinstance(item, str) and "boom" in item for item in batch):
            raise EmbeddingError("the embedding service refused the request")
        return await super().embed_batch(batch)


async def test_a_failing_search_fails_the_evaluation(store: QdrantStore) -> None:
    kb = KnowledgeBase("fails", "", FailingOnBoom(dimensions=64), store, "fails")
    await kb.insert_document(chunks("a.txt", ["cats"]))
    queries = [JudgedQuery(id=str(i), query=f"cats {i}", relevant=[]) for i in range(6)]
    queries.insert(3, JudgedQuery(id="x", query="boom", relevant=[]))
    with pytest.raises(EmbeddingError, match="refused"):
        await evaluate(kb, queries, k=2, concurrency=2)


class CountingSearches(KnowledgeBase):
    """A knowledge base that records the ``top_k`` of every search it is asked for."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.asked: list[int] = []

    async def search(self, queries: Any, top_k: int = 5, *args: Any, **kwargs: Any) -> Any:
        self.asked.append(top_k)
        return await super().search(queries, top_k, *args, **kwargs)


async def test_one_search_when_the_first_page_fills_or_exhausts_the_ranking(
    store: QdrantStore,
) -> None:
    kb = CountingSearches("pets", "", HashingEmbeddingModel(dimensions=256), store, "pets")
    for source, texts in DOCUMENTS.items():
        await kb.insert_document(chunks(source, texts), document_id=source)
    # k = 1 asks for 4 hits and gets 4 (7 chunks): one source ranked, done.
    result = await evaluate(kb, [QUERIES[0]], k=1, depth=1)
    assert [e.source for e in result.queries[0].ranking] == ["cats.txt"]
    assert kb.asked == [4]
    # k = 3 asks for 12 and gets all 7 chunks, 5 sources: the store has nothing more to give.
    kb.asked.clear()
    one = CountingSearches("one", "", HashingEmbeddingModel(dimensions=64), store, "one")
    await one.insert_document(chunks("only.txt", ["cats"]))
    await evaluate(one, [JudgedQuery(id="q", query="cats", relevant=[])], k=3, depth=3)
    assert one.asked == [12]


async def test_uncut_map_reads_a_second_deep_search(store: QdrantStore) -> None:
    kb = CountingSearches("pets", "", HashingEmbeddingModel(dimensions=256), store, "pets")
    for source, texts in DOCUMENTS.items():
        await kb.insert_document(chunks(source, texts), document_id=source)
    dogs = QUERIES[1]
    # The search an agent makes for k = 1 (4 hits), then trec_eval's depth, 1,000
    # sources: 4,000 hits. The top 1 holds dogs.txt only: map@1 = (1/1) / 2; the whole
    # ranking has parrots.txt fifth: (1/1 + 2/5) / 2 = 0.7. The result keeps the top 1.
    result = await evaluate(kb, [dogs], k=1)
    assert kb.asked == [4, 4000]
    [row] = result.queries
    assert [e.source for e in row.ranking] == ["dogs.txt"]
    assert (row.metrics["map"], row.metrics["map_uncut"]) == (0.5, pytest.approx(0.7))
    # A depth of k reads the one ranking.
    kb.asked.clear()
    result = await evaluate(kb, [dogs], k=1, depth=1)
    assert kb.asked == [4]
    assert result.queries[0].metrics["map_uncut"] == 0.5


async def test_k_of_one_is_allowed(knowledge_base: KnowledgeBase) -> None:
    result = await evaluate(knowledge_base, QUERIES, k=1)
    assert result.k == 1
    assert result.queries[0].metrics["precision"] == 1.0  # cats.txt first
    with pytest.raises(ValueError, match=r"^no queries to evaluate$"):
        await evaluate(knowledge_base, [], k=1)


class BlockingSlowQueries(KnowledgeBase):
    """A query starting "slow" waits for an event nobody sets, noting its cancellation."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.started: list[str] = []
        self.cancelled: list[str] = []
        self.release = asyncio.Event()

    async def search(self, queries: Any, top_k: int = 5, *args: Any, **kwargs: Any) -> Any:
        if not str(queries[0]).startswith("slow"):
            return await super().search(queries, top_k, *args, **kwargs)
        self.started.append(queries[0])
        try:
            await self.release.wait()
        except asyncio.CancelledError:
            # Cleaning up takes a turn of the event loop (as closing a connection would)
            # before the cancellation is noted: evaluate must wait for it.
            turn = asyncio.get_running_loop().create_future()
            asyncio.get_running_loop().call_soon(turn.set_result, None)
            await turn
            self.cancelled.append(queries[0])
            raise
        return await super().search(queries, top_k, *args, **kwargs)


async def test_a_failure_cancels_and_waits_for_the_other_queries(store: QdrantStore) -> None:
    kb = BlockingSlowQueries("fails", "", FailingOnBoom(dimensions=64), store, "fails")
    await kb.insert_document(chunks("a.txt", ["cats"]))
    queries = [JudgedQuery(id=str(i), query=f"slow {i}", relevant=[]) for i in range(3)]
    queries.append(JudgedQuery(id="x", query="boom", relevant=[]))
    with pytest.raises(EmbeddingError, match="refused"):
        await evaluate(kb, queries, k=2, concurrency=4)
    # Every query that was waiting finished handling its cancellation before evaluate raised.
    assert sorted(kb.started) == ["slow 0", "slow 1", "slow 2"]
    assert sorted(kb.cancelled) == sorted(kb.started)


def test_a_non_text_chunk_never_holds_a_passage() -> None:
    image = Chunk(
        content=DataBlock.from_bytes(b"\x89PNG", "image/png"),
        source="figure.png",
        chunk_index=0,
        total_chunks=2,
    )
    caption = Chunk(
        content=TextBlock(text="xxxx: the figure"),
        source="figure.png",
        chunk_index=1,
        total_chunks=2,
    )
    hits = [
        VectorSearchResult(score=0.9, document_id="figure.png", chunk=image),
        VectorSearchResult(score=0.8, document_id="figure.png", chunk=caption),
    ]
    judgement = Judgement(source="figure.png", passages=["XX"])
    # The image hit is not relevant; the caption, which holds the passage, is (at rank 2).
    ranking = rank_sources(hits, [judgement], k=3)
    assert [(entry.grade, entry.score) for entry in ranking] == [(0, 0.9), (1, 0.8)]
