"""The reference's RAG examples, written as the reference writes them.

Only the imports differ (``agentscope`` -> ``ragflow_config``) and the
DashScope model is replaced by the deterministic hashing model, so the whole
flow runs offline against a real local Qdrant.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import Field

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import DataBlock, TextBlock
from ragflow_config.rag import (
    ApproxTokenChunker,
    Chunk,
    ChunkerBase,
    KnowledgeBase,
    ParserBase,
    QdrantStore,
    Section,
    TextParser,
)

CATS_MD = b"# Cats\nCats sleep 12-16 hours per day.\n"
DOGS_MD = b"# Dogs\nDogs bark at the postman and chase balls in the park.\n"


async def test_text_example_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    Path("cats.md").write_bytes(CATS_MD)

    # --- 1. Parse the file (reference: "Text file") ---
    parser = TextParser()

    # 1) Pass bytes directly
    sections = await parser.parse(
        file=b"# Cats\nCats sleep 12-16 hours per day.\n",
        filename="cats.md",
    )
    from_bytes = sections

    # 2) Pass a file path (an existing file is read from disk)
    sections = await parser.parse(file="./cats.md", filename="cats.md")

    assert [s.model_dump(exclude={"content": {"id", "created_at"}}) for s in sections] == [
        s.model_dump(exclude={"content": {"id", "created_at"}}) for s in from_bytes
    ]
    assert len(sections) == 1
    assert sections[0].content.text == CATS_MD.decode()
    assert sections[0].source == "cats.md"

    # --- 2. Split into Chunks ---
    chunker = ApproxTokenChunker(
        parameters=ApproxTokenChunker.Parameters(
            chunk_size=256,
            overlap=32,
        ),
    )
    chunks = await chunker.chunk(sections)
    assert [c.content.text for c in chunks] == ["# Cats\nCats sleep 12-16 hours per day."]
    assert (chunks[0].chunk_index, chunks[0].total_chunks) == (0, 1)

    # --- 3. Write to the knowledge base ---
    embedding_model = HashingEmbeddingModel(dimensions=256)

    # QdrantStore is an async context manager; entering it opens the client connection
    store = QdrantStore(location=":memory:")  # or url="http://..." for a real cluster

    async with store:
        knowledge = KnowledgeBase(
            name="demo-kb",
            description="A toy corpus.",
            embedding_model=embedding_model,
            vector_store=store,
            collection="demo-kb",
        )
        # The backing collection is created on first use, sized to embedding_model.dimensions
        document_id = await knowledge.insert_document(
            chunks,
            document_metadata={"filename": "cats.md"},
        )
        assert await store.collection_dimensions("demo-kb") == 256
        dogs = await chunker.chunk(await parser.parse(file=DOGS_MD, filename="dogs.md"))
        dogs_id = await knowledge.insert_document(dogs, document_metadata={"filename": "dogs.md"})

        # --- Vector retrieval ---
        results = await knowledge.search(
            queries=["When do cats sleep?"],
            top_k=3,
            score_threshold=None,  # minimum score to keep a hit; None keeps everything
        )
        for r in results:
            print(r.score, r.document_id, r.chunk.content)

        assert [r.document_id for r in results] == [document_id, dogs_id]
        assert results[0].score > results[1].score
        best = results[0].chunk
        assert best.content.text == chunks[0].content.text
        assert best.metadata == {"filename": "cats.md"}
        assert best.source == "cats.md"

        # --- Document management ---
        summaries = await knowledge.list_documents()
        for s in summaries:
            print(s.document_id, s.source, s.chunk_count, s.metadata)
        by_id = {s.document_id: s for s in summaries}
        assert set(by_id) == {document_id, dogs_id}
        assert (by_id[document_id].source, by_id[document_id].chunk_count) == ("cats.md", 1)
        assert by_id[document_id].metadata == {"filename": "cats.md"}

        # Delete every chunk belonging to one document
        await knowledge.delete_document(document_id)

        assert [s.document_id for s in await knowledge.list_documents()] == [dogs_id]
        after = await knowledge.search(queries=["When do cats sleep?"], top_k=3)
        assert [r.document_id for r in after] == [dogs_id]


async def test_text_example_on_disk_survives_reopening(tmp_path: Path) -> None:
    parser = TextParser()
    chunker = ApproxTokenChunker(parameters=ApproxTokenChunker.Parameters(chunk_size=8, overlap=2))
    chunks = await chunker.chunk(await parser.parse(file=CATS_MD, filename="cats.md"))
    assert len(chunks) > 1  # several records, so persistence is tested for more than one
    embedding_model = HashingEmbeddingModel(dimensions=64)
    path = str(tmp_path / "qdrant")

    def knowledge_on(store: QdrantStore) -> KnowledgeBase:
        return KnowledgeBase(
            name="demo-kb",
            description="A toy corpus.",
            embedding_model=embedding_model,
            vector_store=store,
            collection="demo-kb",
        )

    async with QdrantStore(path=path) as store:
        knowledge = knowledge_on(store)
        document_id = await knowledge.insert_document(
            chunks, document_metadata={"filename": "cats.md"}
        )
        before = await knowledge.search(["When do cats sleep?"], top_k=3)

    async with QdrantStore(path=path) as store:
        knowledge = knowledge_on(store)
        [summary] = await knowledge.list_documents()
        assert (summary.document_id, summary.source) == (document_id, "cats.md")
        assert summary.chunk_count == len(chunks)
        assert summary.metadata == {"filename": "cats.md"}
        after = await knowledge.search(["When do cats sleep?"], top_k=3)
        assert [(r.document_id, r.chunk.chunk_index) for r in after] == [
            (r.document_id, r.chunk.chunk_index) for r in before
        ]
        # On disk vectors are stored as float32, so scores agree to float32 precision.
        assert [r.score for r in after] == pytest.approx([r.score for r in before], abs=1e-6)
        stored = await knowledge.list_chunks(document_id)
        assert [c.content.text for c in stored] == [c.content.text for c in chunks]
        await knowledge.delete_document(document_id)

    async with QdrantStore(path=path) as store:
        knowledge = knowledge_on(store)
        assert await knowledge.list_documents() == []
        assert await knowledge.search(["When do cats sleep?"]) == []


# --- Custom extensions: copied from the reference, imports changed only ---


class MyMarkdownParser(ParserBase):
    supported_media_types = ["text/markdown"]

    async def parse(
        self,
        file: bytes | str,
        filename: str,
    ) -> list[Section]:
        text = file.decode("utf-8") if isinstance(file, bytes) else file
        # Split by H2 headings into multiple Sections, preserving the source
        return [
            Section(
                content=TextBlock(text=block),
                source=filename,
                metadata={"index": index},
            )
            for index, block in enumerate(text.split("\n## "))
        ]


class FixedCharChunker(ChunkerBase):
    chunker_type = "fixed_char"

    class Parameters(ChunkerBase.Parameters):
        chunk_size: int = Field(default=1000, ge=1)

    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for section in sections:
            # Multimodal content is not split — pass through as a whole chunk
            if not isinstance(section.content, TextBlock):
                chunks.append(
                    Chunk(
                        content=section.content,
                        source=section.source,
                        chunk_index=0,
                        total_chunks=0,
                        metadata=dict(section.metadata),
                    ),
                )
                continue
            text = section.content.text
            for start in range(0, len(text), self.parameters.chunk_size):
                chunks.append(
                    Chunk(
                        content=TextBlock(
                            text=text[start : start + self.parameters.chunk_size],
                        ),
                        source=section.source,
                        chunk_index=0,
                        total_chunks=0,
                        metadata=dict(section.metadata),
                    ),
                )
        # Renumber consistently
        for index, chunk in enumerate(chunks):
            chunk.chunk_index = index
            chunk.total_chunks = len(chunks)
        return chunks


GUIDE_MD = (
    "# Pet guide\nIntro text.\n"
    "## Cats\nCats sleep most of the day and purr when content.\n"
    "## Dogs\nDogs need a walk twice a day and love fetching sticks."
)


async def test_custom_parser_and_chunker_through_a_knowledge_base(
    caplog: pytest.LogCaptureFixture,
) -> None:
    parser = MyMarkdownParser()
    sections = await parser.parse(GUIDE_MD.encode(), "guide.md")
    assert [s.metadata for s in sections] == [{"index": 0}, {"index": 1}, {"index": 2}]
    assert ".md" in MyMarkdownParser.supported_extensions()

    chunker = FixedCharChunker(parameters=FixedCharChunker.Parameters(chunk_size=30))
    schema = FixedCharChunker.Parameters.model_json_schema()
    assert schema["properties"]["chunk_size"]["minimum"] == 1
    image = DataBlock.from_bytes(b"\x89PNG\r\n\x1a\n", "image/png", name="photo.png")
    chunks = await chunker.chunk([*sections, Section(content=image, source="guide.md")])
    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.total_chunks for c in chunks} == {len(chunks)}
    assert chunks[-1].content == image

    async with QdrantStore(location=":memory:") as store:
        knowledge = KnowledgeBase(
            name="guide",
            description="Custom parser and chunker.",
            embedding_model=HashingEmbeddingModel(dimensions=128),
            vector_store=store,
            collection="guide",
        )
        with caplog.at_level("WARNING", logger="ragflow_config.knowledge_base"):
            document_id = await knowledge.insert_document(chunks)
        assert "guide.md#" in caplog.text and "image/png" in caplog.text

        [summary] = await knowledge.list_documents()
        assert (summary.document_id, summary.chunk_count) == (document_id, len(chunks) - 1)
        [hit] = await knowledge.search(["walk twice a day"], top_k=1)
        assert "walk twice" in hit.chunk.content.text
        assert hit.chunk.metadata == {"index": 2}
