"""KnowledgeBase over a real local Qdrant (in memory and on disk) with the hashing model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ragflow_config._errors import EmbeddingError
from ragflow_config.embedding import EmbeddingModelBase, HashingEmbeddingModel
from ragflow_config.message import DataBlock, TextBlock
from ragflow_config.rag import (
    ApproxTokenChunker,
    Chunk,
    CollectionMismatchError,
    DocumentSummary,
    KnowledgeBase,
    ParserBase,
    QdrantStore,
    Section,
    VectorRecord,
    VectorSearchResult,
    VectorStoreError,
)

PETS = [
    "Cats sleep twelve to sixteen hours a day.",
    "Cats purr when they are content and warm.",
    "Dogs bark at the postman every morning.",
    "Parrots can learn many words and whistle tunes.",
    "Goldfish remember things for months, not three seconds.",
    "Hamsters run on their wheels at night.",
]
PNG = DataBlock.from_bytes(b"\x89PNG\r\n\x1a\n", "image/png", name="chart.png")
JPEG = DataBlock.from_bytes(b"\xff\xd8\xff\xe0", "image/jpeg", name="photo.jpg")


def text_chunks(*texts: str, source: str = "pets.txt", **metadata: Any) -> list[Chunk]:
    """One numbered text chunk per text, as a chunker returns them."""
    return [
        Chunk(
            content=TextBlock(text=text),
            source=source,
            chunk_index=index,
            total_chunks=len(texts),
            metadata=dict(metadata),
        )
        for index, text in enumerate(texts)
    ]


def keys(results: list[VectorSearchResult]) -> list[tuple[str, int]]:
    return [(r.document_id, r.chunk.chunk_index) for r in results]


class RecordingHashingModel(EmbeddingModelBase):
    """The hashing model, recording every batch it is asked for; it can fail on one of them."""

    def __init__(
        self, dimensions: int = 64, batch_size: int = 32, fail_on_batch: int | None = None
    ) -> None:
        super().__init__(batch_size=batch_size, max_concurrency=1)
        self._hashing = HashingEmbeddingModel(dimensions=dimensions)
        self._fail_on_batch = fail_on_batch
        self.batches: list[list[str | DataBlock]] = []

    @property
    def model(self) -> str:
        return self._hashing.model

    @property
    def dimensions(self) -> int:
        return self._hashing.dimensions

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        self.batches.append(list(batch))
        if len(self.batches) == self._fail_on_batch:
            raise EmbeddingError(f"the embedding service rejected batch {self._fail_on_batch}")
        return await self._hashing.embed_batch(batch)


class FailingWriteStore(QdrantStore):
    """A real Qdrant store whose ``insert``, once ``failing``, writes one batch and then fails."""

    failing = False
    written_before_failure: list[DocumentSummary]

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        if not self.failing:
            await super().insert(collection, records)
            return
        await super().insert(collection, records[: self.parameters.batch_size])
        self.written_before_failure = await self.list_documents(collection)
        raise VectorStoreError(self.store_name, "connection lost during upsert")


def knowledge(
    store: QdrantStore,
    model: EmbeddingModelBase,
    collection: str = "pets",
    metadata_filter: dict[str, Any] | None = None,
) -> KnowledgeBase:
    return KnowledgeBase(
        name=f"kb-{collection}",
        description="test knowledge base",
        embedding_model=model,
        vector_store=store,
        collection=collection,
        metadata_filter=metadata_filter,
    )


# --- search ---


async def test_search_deduplicates_across_queries_keeping_the_best_score(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    kb = knowledge(store, hashing_model)
    await kb.insert_document(text_chunks(*PETS))
    queries = ["cats sleep all day", "cats purr when content"]
    single = [
        {key: r.score for key, r in zip(keys(hits), hits, strict=True)}
        for hits in [await kb.search([q], top_k=10) for q in queries]
    ]

    combined = await kb.search(queries, top_k=10)

    assert len(keys(combined)) == len(set(keys(combined))) == len(PETS)
    assert set(keys(combined)) == set(single[0]) | set(single[1])
    # Local Qdrant scores are float32 sums, equal only to about 1e-7 between calls.
    for key, hit in zip(keys(combined), combined, strict=True):
        assert hit.score == pytest.approx(max(s[key] for s in single if key in s), abs=1e-6)
    # Each query's best chunk wins over the other query's weaker match of it.
    by_text = {hit.chunk.content.text: hit.score for hit in combined}
    assert by_text[PETS[0]] == pytest.approx(max(single[0].values()), abs=1e-6)
    assert by_text[PETS[1]] == pytest.approx(max(single[1].values()), abs=1e-6)
    assert keys(await kb.search(["cats purr", "cats purr"], top_k=10)) == keys(
        await kb.search(["cats purr"], top_k=10)
    )


async def test_score_threshold_keeps_equal_scores_and_drops_lower(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    kb = knowledge(store, hashing_model)
    # One word is one hashed feature: a one-hot vector, so "cats" scores exactly 1.0
    # against itself and float arithmetic leaves no doubt about equality.
    doc = await kb.insert_document(text_chunks("cats", "cats purr", "dogs", *PETS))
    everything = await kb.search(["cats"], top_k=20)
    assert everything[0].score == 1.0
    assert all(hit.score < 1.0 for hit in everything[1:])

    assert keys(await kb.search(["cats"], top_k=20, score_threshold=1.0)) == [(doc, 0)]

    ranked = await kb.search(["cats sleep and purr"], top_k=20)
    assert ranked[1].score - ranked[2].score > 1e-3
    between = (ranked[1].score + ranked[2].score) / 2
    kept = await kb.search(["cats sleep and purr"], top_k=20, score_threshold=between)
    assert keys(kept) == keys(ranked[:2])
    assert await kb.search(["cats"], top_k=20, score_threshold=1.01) == []


async def test_top_k_truncates_results_sorted_best_first(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    kb = knowledge(store, hashing_model)
    await kb.insert_document(text_chunks(*PETS))
    queries = ["cats sleep", "dogs bark at night", "parrots learn words"]

    everything = await kb.search(queries, top_k=10)
    top3 = await kb.search(queries, top_k=3)

    scores = [hit.score for hit in everything]
    assert scores == sorted(scores, reverse=True)
    assert len(top3) == 3
    assert keys(top3) == keys(everything[:3])
    assert await kb.search(queries, top_k=0) == []


async def test_data_block_queries_are_dropped_for_a_text_only_model(store: QdrantStore) -> None:
    model = RecordingHashingModel()
    kb = knowledge(store, model)

    assert await kb.search([PNG]) == []
    assert await kb.search([]) == []
    assert model.batches == []  # no embedding call when no query is left
    assert not await store.has_collection("pets")  # nor any store I/O

    await kb.insert_document(text_chunks(*PETS))
    model.batches.clear()
    mixed = await kb.search([PNG, "cats sleep", JPEG], top_k=3)
    assert model.batches == [["cats sleep"]]
    assert keys(mixed) == keys(await kb.search(["cats sleep"], top_k=3))


async def test_search_rejects_a_bare_string(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    kb = knowledge(store, hashing_model)
    with pytest.raises(TypeError, match="list of queries"):
        await kb.search("cats sleep")  # type: ignore[arg-type]


# --- tenant isolation ---


class TenantHijackingParser(ParserBase):
    """A malicious parser that labels everything it reads as tenant b's."""

    supported_media_types = ["text/plain"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        text = file.decode() if isinstance(file, bytes) else file
        return [
            Section(
                content=TextBlock(text=text),
                source=filename,
                metadata={"tenant_id": "b", "kind": "memo"},
            )
        ]


async def test_tenants_sharing_a_collection_are_isolated(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    tenant_a = knowledge(store, hashing_model, "shared", {"tenant_id": "a"})
    tenant_b = knowledge(store, hashing_model, "shared", {"tenant_id": "b"})
    chunker = ApproxTokenChunker(chunk_size=8, overlap=2)
    sections = await TenantHijackingParser().parse(
        b"Tenant a secret roadmap: launch the cat cafe in spring, then expand north.",
        "a-roadmap.txt",
    )
    chunks = await chunker.chunk(sections)
    assert len(chunks) > 1 and all(c.metadata["tenant_id"] == "b" for c in chunks)

    a_doc = await tenant_a.insert_document(chunks)
    b_doc = await tenant_b.insert_document(
        text_chunks("Tenant b secret roadmap: open a dog park.", source="b-roadmap.txt")
    )

    # Stored under tenant a, whatever the parser claimed.
    unscoped = await store.list_chunks("shared", a_doc, limit=100)
    assert len(unscoped) == len(chunks)
    assert all(c.metadata == {"tenant_id": "a", "kind": "memo"} for c in unscoped)

    assert [s.document_id for s in await tenant_a.list_documents()] == [a_doc]
    assert [s.document_id for s in await tenant_b.list_documents()] == [b_doc]
    a_hits = await tenant_a.search(["tenant b secret roadmap dog park"], top_k=20)
    b_hits = await tenant_b.search(["tenant a secret roadmap cat cafe"], top_k=20)
    assert a_hits and {hit.document_id for hit in a_hits} == {a_doc}
    assert b_hits and {hit.document_id for hit in b_hits} == {b_doc}
    assert await tenant_a.list_chunks(b_doc) == []

    await tenant_a.delete_document(b_doc)  # not tenant a's document: deletes nothing

    [b_summary] = await tenant_b.list_documents()
    assert (b_summary.document_id, b_summary.chunk_count) == (b_doc, 1)
    assert len(await store.list_documents("shared")) == 2

    await tenant_a.delete_document(a_doc)
    assert await tenant_a.list_documents() == []
    assert [s.document_id for s in await tenant_b.list_documents()] == [b_doc]


async def test_a_nested_metadata_filter_scopes_and_stamps(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    team_x = knowledge(store, hashing_model, "org", {"org": {"team": "x"}})
    team_y = knowledge(store, hashing_model, "org", {"org": {"team": "y"}})
    everyone = knowledge(store, hashing_model, "org")

    x_doc = await team_x.insert_document(
        text_chunks("Quarterly cat food budget.", org={"team": "y", "floor": 3})
    )
    y_doc = await team_y.insert_document(text_chunks("Quarterly dog food budget."))

    [x_summary] = await team_x.list_documents()
    assert x_summary.document_id == x_doc
    assert x_summary.metadata == {"org": {"team": "x", "floor": 3}}
    assert [s.document_id for s in await team_y.list_documents()] == [y_doc]
    assert {s.document_id for s in await everyone.list_documents()} == {x_doc, y_doc}
    assert keys(await team_y.search(["quarterly cat food budget"], top_k=5)) == [(y_doc, 0)]

    await team_y.delete_document(x_doc)
    assert [s.document_id for s in await team_x.list_documents()] == [x_doc]


def test_an_unusable_metadata_filter_is_refused_before_any_io(
    hashing_model: HashingEmbeddingModel,
) -> None:
    store = QdrantStore(location=":memory:")  # never entered: the check needs no I/O
    with pytest.raises(ValueError, match="tenant_id"):
        knowledge(store, hashing_model, "shared", {"tenant_id": ["a", "b"]})
    with pytest.raises(ValueError, match="empty mapping"):
        knowledge(store, hashing_model, "shared", {"org": {}})


# --- collection dimensions ---


async def test_a_collection_of_another_dimension_is_refused(store: QdrantStore) -> None:
    small = knowledge(store, HashingEmbeddingModel(dimensions=64), "shared")
    doc = await small.insert_document(text_chunks(*PETS[:2]))
    large = knowledge(store, HashingEmbeddingModel(dimensions=128), "shared")

    with pytest.raises(CollectionMismatchError) as raised:
        await large.insert_document(text_chunks("Cats nap in the sun."))
    message = str(raised.value)
    assert "'shared'" in message and "64-dimensional" in message
    assert "128-dimensional" in message and "HashingEmbeddingModel" in message
    with pytest.raises(CollectionMismatchError):
        await large.search(["cats"])

    [summary] = await small.list_documents()
    assert (summary.document_id, summary.chunk_count) == (doc, 2)
    assert await store.collection_dimensions("shared") == 64


async def test_a_reopened_disk_collection_keeps_its_dimension_documents_and_deletions(
    tmp_path: Path,
) -> None:
    path = str(tmp_path / "qdrant")
    model = HashingEmbeddingModel(dimensions=64)
    async with QdrantStore(path=path) as store:
        doc = await knowledge(store, model).insert_document(
            text_chunks(*PETS), document_metadata={"filename": "pets.txt"}
        )
        before = await knowledge(store, model).search(["When do cats sleep?"], top_k=3)
    async with QdrantStore(path=path) as store:
        with pytest.raises(CollectionMismatchError, match="64-dimensional"):
            await knowledge(store, HashingEmbeddingModel(dimensions=128)).list_documents()
        kb = knowledge(store, model)
        [summary] = await kb.list_documents()
        assert (summary.document_id, summary.source) == (doc, "pets.txt")
        assert (summary.chunk_count, summary.metadata) == (len(PETS), {"filename": "pets.txt"})
        after = await kb.search(["When do cats sleep?"], top_k=3)
        assert keys(after) == keys(before)
        # On disk vectors are stored as float32, so scores agree to float32 precision.
        assert [r.score for r in after] == pytest.approx([r.score for r in before], abs=1e-6)
        assert [c.content.text for c in await kb.list_chunks(doc)] == PETS
        await kb.delete_document(doc)
    async with QdrantStore(path=path) as store:
        kb = knowledge(store, model)
        assert await kb.list_documents() == []
        assert await kb.search(["When do cats sleep?"]) == []


# --- failures leave no partial document ---


async def test_a_failed_embedding_call_leaves_nothing_behind(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    healthy = knowledge(store, hashing_model)
    keeper = await healthy.insert_document(text_chunks("Tortoises live for a century."))
    model = RecordingHashingModel(batch_size=2, fail_on_batch=3)
    flaky = knowledge(store, model)

    with pytest.raises(EmbeddingError, match="batch 3"):
        await flaky.insert_document(text_chunks(*PETS, "Rabbits thump.", "Mice squeak."))
    assert len(model.batches) >= 3  # it failed after two batches had been embedded
    assert [s.document_id for s in await healthy.list_documents()] == [keeper]
    assert {hit.document_id for hit in await healthy.search(PETS, top_k=20)} == {keeper}


async def test_a_failed_store_write_leaves_nothing_behind(
    store_options: dict[str, Any], hashing_model: HashingEmbeddingModel
) -> None:
    async with FailingWriteStore(batch_size=2, **store_options) as store:
        kb = knowledge(store, hashing_model)
        keeper = await kb.insert_document(text_chunks("Tortoises live for a century."))
        store.failing = True

        with pytest.raises(VectorStoreError, match="connection lost"):
            await kb.insert_document(text_chunks(*PETS), document_id="half-written")

        partial = {s.document_id: s.chunk_count for s in store.written_before_failure}
        assert partial == {keeper: 1, "half-written": 2}  # the rollback had work to do
        assert [s.document_id for s in await kb.list_documents()] == [keeper]
        assert await kb.list_chunks("half-written") == []


# --- what gets written ---


async def test_data_block_chunks_are_skipped_by_a_text_only_model_and_the_rest_renumbered(
    store: QdrantStore, caplog: pytest.LogCaptureFixture
) -> None:
    sections = [
        Section(
            content=TextBlock(text="Slide one: cats."), source="deck.pptx", metadata={"slide": 1}
        ),
        Section(content=PNG, source="deck.pptx", metadata={"slide": 2}),
        Section(
            content=TextBlock(text="Slide three: dogs."), source="deck.pptx", metadata={"slide": 3}
        ),
        Section(content=JPEG, source="deck.pptx", metadata={"slide": 4}),
        Section(
            content=TextBlock(text="Slide five: parrots."),
            source="deck.pptx",
            metadata={"slide": 5},
        ),
    ]
    chunks = await ApproxTokenChunker().chunk(sections)
    model = RecordingHashingModel()
    kb = knowledge(store, model)

    with caplog.at_level("WARNING", logger="ragflow_config.knowledge_base"):
        doc = await kb.insert_document(chunks)

    assert "skipping 2 chunk(s)" in caplog.text
    assert "deck.pptx#1 (image/png)" in caplog.text
    assert "deck.pptx#3 (image/jpeg)" in caplog.text
    assert all(isinstance(item, str) for batch in model.batches for item in batch)
    stored = await kb.list_chunks(doc)
    assert [(c.chunk_index, c.total_chunks, c.metadata["slide"]) for c in stored] == [
        (0, 3, 1),
        (1, 3, 3),
        (2, 3, 5),
    ]
    assert [c.content.text for c in stored] == [
        "Slide one: cats.",
        "Slide three: dogs.",
        "Slide five: parrots.",
    ]
    [summary] = await kb.list_documents()
    assert summary.chunk_count == 3


async def test_a_document_of_only_data_blocks_writes_nothing_for_a_text_only_model(
    store: QdrantStore, caplog: pytest.LogCaptureFixture
) -> None:
    model = RecordingHashingModel()
    kb = knowledge(store, model)
    chunks = await ApproxTokenChunker().chunk([Section(content=PNG, source="chart.png")])
    with caplog.at_level("WARNING", logger="ragflow_config.knowledge_base"):
        assert await kb.insert_document(chunks, document_id="chart") == "chart"
    assert "chart.png#0 (image/png)" in caplog.text
    assert model.batches == []
    assert not await store.has_collection("pets")


async def test_inserting_no_chunks_writes_nothing(store: QdrantStore) -> None:
    model = RecordingHashingModel()
    kb = knowledge(store, model)

    generated = await kb.insert_document([])
    given = await kb.insert_document([], document_id="kept-id")

    assert len(generated) == 32 and int(generated, 16) >= 0
    assert given == "kept-id"
    assert model.batches == []
    assert not await store.has_collection("pets")


async def test_metadata_precedence_document_then_chunk_then_filter(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    kb = knowledge(store, hashing_model, metadata_filter={"tenant_id": "t1"})
    chunks = text_chunks("Page two about cats.", page=2, tenant_id="evil")
    doc = await kb.insert_document(
        chunks, document_metadata={"filename": "cats.pdf", "page": 1, "tenant_id": "doc"}
    )
    [stored] = await kb.list_chunks(doc)
    assert stored.metadata == {"filename": "cats.pdf", "page": 2, "tenant_id": "t1"}


async def test_the_callers_chunks_are_not_mutated(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    chunks = [
        *text_chunks("Cats.", "Dogs.", org={"team": "y", "floor": 3}, page=2),
        Chunk(content=PNG, source="pets.txt", chunk_index=2, total_chunks=4),
        Chunk(
            content=TextBlock(text="Parrots."),
            source="pets.txt",
            chunk_index=3,
            total_chunks=4,
            metadata={"org": {"team": "y"}},
        ),
    ]
    for chunk in chunks[:2]:
        chunk.total_chunks = 4
    before = [chunk.model_dump() for chunk in chunks]
    document_metadata = {"filename": "pets.txt", "org": {"site": "north"}}
    kb = knowledge(store, hashing_model, metadata_filter={"org": {"team": "x"}})

    doc = await kb.insert_document(chunks, document_metadata=document_metadata)

    assert [chunk.model_dump() for chunk in chunks] == before
    assert document_metadata == {"filename": "pets.txt", "org": {"site": "north"}}
    stored = await kb.list_chunks(doc)
    assert [c.metadata["org"] for c in stored] == [
        {"site": "north", "team": "x", "floor": 3},
        {"site": "north", "team": "x", "floor": 3},
        {"site": "north", "team": "x"},
    ]


# --- vectors made elsewhere ---


async def test_given_embeddings_are_stored_without_calling_the_model(store: QdrantStore) -> None:
    made_elsewhere = (await HashingEmbeddingModel(dimensions=64)(PETS[:3])).embeddings
    model = RecordingHashingModel()
    kb = knowledge(store, model)

    doc = await kb.insert_document(text_chunks(*PETS[:3]), embeddings=made_elsewhere)

    assert model.batches == []
    [hit] = await kb.search([PETS[1]], top_k=1)
    assert (hit.document_id, hit.chunk.chunk_index) == (doc, 1)
    assert hit.score == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("vectors", "message"),
    [
        ([[0.125] * 64] * 2, "2 vectors for 3 chunks"),
        ([[0.125] * 64, [0.125] * 32, [0.125] * 64], "other than 64 dimensions"),
    ],
)
async def test_given_embeddings_that_do_not_fit_write_nothing(
    store: QdrantStore, vectors: list[list[float]], message: str
) -> None:
    kb = knowledge(store, RecordingHashingModel())
    keeper = await kb.insert_document(text_chunks("Tortoises live for a century."))
    with pytest.raises(RuntimeError, match=message):
        await kb.insert_document(text_chunks(*PETS[:3]), embeddings=vectors)
    assert [s.document_id for s in await kb.list_documents()] == [keeper]


async def test_reused_vectors_are_stored_and_only_the_other_texts_embedded(
    store: QdrantStore,
) -> None:
    model = RecordingHashingModel()
    kb = knowledge(store, model)
    made_before = (await HashingEmbeddingModel(dimensions=64)([PETS[0], PETS[2]])).embeddings

    doc = await kb.insert_document(
        text_chunks(*PETS[:3]), reuse={PETS[0]: made_before[0], PETS[2]: made_before[1]}
    )

    assert [text for batch in model.batches for text in batch] == [PETS[1]]
    stored = {c.chunk_index: v for c, v in await kb.document_vectors(doc)}
    assert stored[0] == pytest.approx(made_before[0], abs=1e-6)
    assert stored[2] == pytest.approx(made_before[1], abs=1e-6)


async def test_a_reused_vector_of_other_dimensions_writes_nothing(store: QdrantStore) -> None:
    kb = knowledge(store, RecordingHashingModel())
    with pytest.raises(RuntimeError, match="other than 64 dimensions"):
        await kb.insert_document(text_chunks(*PETS[:3]), reuse={PETS[1]: [0.125] * 32})
    assert await kb.list_documents() == []


async def test_a_tenant_cannot_take_over_another_tenants_document_id(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    tenant_a = knowledge(store, hashing_model, metadata_filter={"tenant_id": "a"})
    tenant_b = knowledge(store, hashing_model, metadata_filter={"tenant_id": "b"})
    await tenant_a.insert_document(text_chunks(*PETS[:2]), document_id="handbook")

    await tenant_b.insert_document(text_chunks("Tenant b's own handbook."), document_id="handbook")
    await tenant_b.delete_document("handbook")

    [summary] = await tenant_a.list_documents()
    assert (summary.document_id, summary.chunk_count) == ("handbook", 2)
    assert [c.content.text for c in await tenant_a.list_chunks("handbook")] == PETS[:2]
    assert await tenant_b.list_documents() == []


class DuckTypedModel:
    """An embedding model as AgentScope code writes one: no base class, just the interface."""

    supports_multimodal = False
    dimensions = 64

    def __init__(self) -> None:
        self.hashing = HashingEmbeddingModel(dimensions=64)
        self.calls: list[list[Any]] = []

    async def __call__(self, inputs: list[Any]) -> Any:
        self.calls.append(list(inputs))
        return await self.hashing(inputs)


async def test_a_model_of_any_class_with_the_interface_works(store: QdrantStore) -> None:
    model = DuckTypedModel()
    kb = KnowledgeBase("pets", "Pets.", model, store, "pets")  # type: ignore[arg-type]
    await kb.insert_document(text_chunks(*PETS), document_id="pets")

    hits = await kb.search([PNG, "cats sleep"], top_k=1)
    assert keys(hits) == [("pets", 0)]
    assert model.calls[-1] == ["cats sleep"]  # the image query was dropped, text-only model


class RecordingStore(QdrantStore):
    """A real Qdrant store that records the chunk indexes of every insert call."""

    inserts: list[list[int]]

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        self.inserts.append([record.chunk.chunk_index for record in records])
        await super().insert(collection, records)


async def test_a_large_document_is_embedded_and_written_a_batch_at_a_time(
    store_options: dict[str, Any],
) -> None:
    model = RecordingHashingModel(batch_size=1000)
    texts = [f"Paragraph {i} about {PETS[i % len(PETS)]}" for i in range(10)]
    async with RecordingStore(**store_options) as store:
        store.inserts = []
        kb = knowledge(store, model)
        kb.write_batch = 4
        doc = await kb.insert_document(text_chunks(*texts))

        assert store.inserts == [[9, 8, 7, 6], [5, 4, 3, 2], [1, 0]]  # chunk 0 in the last
        assert [len(batch) for batch in model.batches] == [4, 4, 2]  # never all 10 vectors
        assert [c.content.text for c in await kb.list_chunks(doc)] == texts


async def test_a_failure_between_batches_leaves_no_partial_document_and_before_them_the_old(
    store: QdrantStore,
) -> None:
    old = knowledge(store, RecordingHashingModel())
    await old.insert_document(text_chunks(*PETS), document_id="pets")

    failing_first = knowledge(store, RecordingHashingModel(batch_size=1000, fail_on_batch=1))
    failing_first.write_batch = 4
    with pytest.raises(EmbeddingError):
        await failing_first.insert_document(text_chunks(*reversed(PETS)), document_id="pets")
    [chunk_0] = await old.list_chunks("pets", limit=1)
    assert chunk_0.content.text == PETS[0]  # nothing was written: the old version stands

    failing_second = knowledge(store, RecordingHashingModel(batch_size=1000, fail_on_batch=2))
    failing_second.write_batch = 4
    with pytest.raises(EmbeddingError):
        await failing_second.insert_document(text_chunks(*reversed(PETS)), document_id="pets")
    assert await old.list_documents() == []  # half written: removed, never half a document


async def test_list_chunks_pages_by_offset_and_limit(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    kb = knowledge(store, hashing_model)
    doc = await kb.insert_document(text_chunks(*(f"part {i} of five" for i in range(5))))
    assert [c.chunk_index for c in await kb.list_chunks(doc, offset=2, limit=2)] == [2, 3]
    assert [c.chunk_index for c in await kb.list_chunks(doc, offset=4)] == [4]


async def test_clear_deletes_within_scope_and_drops_the_collection_once_empty(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    tenant_a = knowledge(store, hashing_model, "shared", {"tenant_id": "a"})
    tenant_b = knowledge(store, hashing_model, "shared", {"tenant_id": "b"})
    await tenant_a.insert_document(text_chunks("cats purr", "cats sleep"), document_id="a1")
    await tenant_a.insert_document(text_chunks("dogs bark"), document_id="a2")
    await tenant_b.insert_document(text_chunks("fish swim"), document_id="b1")

    # Tenant b has a document of the same id: clearing tenant a must not touch it.
    await tenant_b.insert_document(text_chunks("birds sing"), document_id="a1")
    assert await tenant_a.clear() is False  # tenant b's documents keep the collection
    assert await tenant_a.list_documents() == []
    assert sorted(s.document_id for s in await tenant_b.list_documents()) == ["a1", "b1"]
    assert await store.has_collection("shared")

    assert await tenant_b.clear() is True
    assert not await store.has_collection("shared")
    assert await tenant_b.clear() is True  # nothing to clear: no collection
    # The next write through the cleared handle creates it again.
    await tenant_b.insert_document(text_chunks("fish again"), document_id="b2")
    assert [s.document_id for s in await tenant_b.list_documents()] == ["b2"]


async def test_list_chunks_gives_thirty_by_default(
    store: QdrantStore, hashing_model: HashingEmbeddingModel
) -> None:
    kb = knowledge(store, hashing_model)
    doc = await kb.insert_document(text_chunks(*(f"part {i}" for i in range(31))))
    assert [c.chunk_index for c in await kb.list_chunks(doc)] == list(range(30))


class FailingWriteAndDeleteStore(FailingWriteStore):
    """Fails the write, then the rollback's delete as well."""

    async def delete(self, *args: Any, **kwargs: Any) -> None:
        if self.failing:
            raise VectorStoreError(self.store_name, "connection still lost")
        await super().delete(*args, **kwargs)


async def test_a_rollback_that_fails_is_logged_with_the_document(
    hashing_model: HashingEmbeddingModel, caplog: pytest.LogCaptureFixture
) -> None:
    async with FailingWriteAndDeleteStore(batch_size=2, location=":memory:") as store:
        kb = knowledge(store, hashing_model)
        await kb.insert_document(text_chunks("Tortoises live for a century."))
        store.failing = True
        with pytest.raises(VectorStoreError, match="connection lost"):
            await kb.insert_document(text_chunks(*PETS), document_id="half-written")
    [record] = [r for r in caplog.records if r.name == "ragflow_config.knowledge_base"]
    assert (
        record.getMessage() == "kb-pets: could not remove the partly written document half-written"
    )
    assert record.exc_info is not None and "connection still lost" in str(record.exc_info[1])
