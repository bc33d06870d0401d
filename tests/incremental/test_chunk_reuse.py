"""An update, or a rebuild for a chunker or parser change, embeds only the chunk texts the
stored version does not hold, when the same model embedded it."""

from __future__ import annotations

import random
from pathlib import Path
from typing import ClassVar

import pytest

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import DataBlock
from ragflow_config.pipeline import Pipeline, Registry, RunOptions
from ragflow_config.rag import VectorSearchResult

from ._corpus import paragraph, write_corpus, write_pipeline

IN_PROCESS = RunOptions(workers=0)  # the model then embeds in the writer, where reuse happens


class CountingModel(HashingEmbeddingModel):
    """The hashing model, counting the texts it is asked to embed."""

    texts: ClassVar[list[str]] = []

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        CountingModel.texts.extend(item for item in batch if isinstance(item, str))
        return await super().embed_batch(batch)


class OtherCountingModel(CountingModel):
    """Another model of the same dimensions: its vectors must never be taken for the first's."""

    @property
    def model(self) -> str:
        return "hashing-other"


@pytest.fixture
def registry() -> Registry:
    registry = Registry.from_entry_points()
    registry.register("embedding", "counting", CountingModel)
    registry.register("embedding", "other_counting", OtherCountingModel)
    CountingModel.texts.clear()
    return registry


def pipeline_file(tmp_path: Path, corpus: Path, name: str = "pipeline", **kwargs: object) -> Path:
    return write_pipeline(
        tmp_path / f"{name}.yaml",
        store_path=tmp_path / f"{name}-store",
        corpus=corpus,
        embedding_type=str(kwargs.pop("embedding_type", "counting")),
        **kwargs,  # type: ignore[arg-type]
    )


def edit(path: Path, seed: int) -> None:
    """Insert a paragraph in the middle of a file's paragraphs."""
    blocks = path.read_text(encoding="utf-8").rstrip("\n").split("\n\n")
    middle = (len(blocks) + 1) // 2
    blocks.insert(middle, paragraph(random.Random(seed), 12))
    path.write_text("\n\n".join(blocks) + "\n", encoding="utf-8")


async def stored(pipeline: Pipeline) -> dict[str, dict[int, tuple[str, list[float]]]]:
    """Every stored chunk's text and vector, by source path and chunk index."""
    async with pipeline.build() as built:
        kb = built.knowledge_bases["docs"]
        return {
            summary.source: {
                chunk.chunk_index: (chunk.content.text, vector)  # type: ignore[union-attr]
                for chunk, vector in await kb.document_vectors(summary.document_id)
            }
            for summary in await kb.list_documents()
        }


async def test_an_edit_embeds_only_the_new_chunk_texts(tmp_path: Path, registry: Registry) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 30)
    pipeline = Pipeline.load(pipeline_file(tmp_path, corpus), registry)
    await pipeline.run(options=IN_PROCESS)
    before = await stored(pipeline)
    edited = sorted(source for source, chunks in before.items() if len(chunks) >= 4)[:5]
    for seed, source in enumerate(edited):
        edit(corpus / source, seed)

    CountingModel.texts.clear()
    report = (await pipeline.run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.count("update") == len(edited)
    after = await stored(pipeline)
    new_texts = [
        text
        for source in edited
        for text, _ in after[source].values()
        if text not in {old for old, _ in before[source].values()}
    ]
    assert sorted(CountingModel.texts) == sorted(new_texts)
    assert 0 < len(new_texts) < sum(len(after[source]) for source in edited)

    # What the update stored is what embedding the edited corpus from scratch stores.
    fresh = Pipeline.load(pipeline_file(tmp_path, corpus, name="fresh"), registry)
    await fresh.run(options=IN_PROCESS)
    from_scratch = await stored(fresh)
    assert after.keys() == from_scratch.keys()
    for source, chunks in from_scratch.items():
        assert after[source].keys() == chunks.keys()
        for index, (text, vector) in chunks.items():
            assert after[source][index][0] == text
            assert after[source][index][1] == pytest.approx(vector, abs=1e-6)
    async with pipeline.build() as built, fresh.build() as fresh_built:
        for query in ("lantern harbor", "glacier summit cedar", "copper falcon engine"):
            hits = await built.knowledge_bases["docs"].search([query], top_k=8)
            fresh_hits = await fresh_built.knowledge_bases["docs"].search([query], top_k=8)
            assert ranking(hits) == ranking(fresh_hits)


def ranking(hits: list[VectorSearchResult]) -> list[tuple[float, str, int]]:
    """Hits by score, ties by position: the hashing model's short texts often tie."""
    return sorted((-round(h.score, 5), h.chunk.source, h.chunk.chunk_index) for h in hits)


async def test_a_new_embedding_model_reuses_no_vector(tmp_path: Path, registry: Registry) -> None:
    """Its vectors are another model's, even of the same dimensions and for the same texts."""
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 30)
    path = pipeline_file(tmp_path, corpus)
    await Pipeline.load(path, registry).run(options=IN_PROCESS)
    changed_pipeline(path, "type: counting", "type: other_counting")

    CountingModel.texts.clear()
    report = (await Pipeline.load(path, registry).run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.fingerprint_changes == ["embedding"]
    assert report.rebuild is not None and report.rebuild.switched
    assert len(CountingModel.texts) == report.chunks > 0  # every chunk went to the model
    assert report.vectors.reused == 0


@pytest.mark.parametrize(
    ("changed", "before", "after"),
    [
        ("chunker", "overlap: 8}", "overlap: 8, boundaries: content_defined}"),
        (
            "parsers",
            "parsers: [{type: text}]",
            "parsers: [{type: text, parameters: {errors: replace}}]",
        ),
    ],
)
async def test_a_rebuild_for_a_chunker_or_parser_change_embeds_only_new_texts(
    tmp_path: Path, registry: Registry, changed: str, before: str, after: str
) -> None:
    """Issue 52, item 3: the live version's vectors serve the rebuilt chunks of the same text,
    as the model would make them again (the same model embeds the text alone)."""
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 30)
    path = pipeline_file(tmp_path, corpus)
    await Pipeline.load(path, registry).run(options=IN_PROCESS)
    pipeline = Pipeline.load(path, registry)
    old = await stored(pipeline)
    changed_pipeline(path, before, after)
    pipeline = Pipeline.load(path, registry)

    CountingModel.texts.clear()
    report = (await pipeline.run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.fingerprint_changes == [changed]
    assert report.rebuild is not None and report.rebuild.switched
    new = await stored(pipeline)
    unseen = [
        text
        for source, chunks in new.items()
        for text, _ in chunks.values()
        if text not in {old_text for old_text, _ in old[source].values()}
    ]
    assert sorted(CountingModel.texts) == sorted(unseen)
    assert report.vectors.reused == report.chunks - len(unseen) > 10
    # What the rebuild stored is what embedding the corpus from scratch stores.
    fresh_path = pipeline_file(tmp_path, corpus, name="fresh")
    changed_pipeline(fresh_path, before, after)
    fresh = Pipeline.load(fresh_path, registry)
    await fresh.run(options=IN_PROCESS)
    from_scratch = await stored(fresh)
    for source, chunks in from_scratch.items():
        for index, (text, vector) in chunks.items():
            assert new[source][index][0] == text
            assert new[source][index][1] == pytest.approx(vector, abs=1e-6)


def changed_pipeline(path: Path, before: str, after: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.count(before) == 1
    path.write_text(text.replace(before, after), encoding="utf-8")
