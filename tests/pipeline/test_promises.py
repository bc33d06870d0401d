"""The promises of docs/concepts.md about runs and re-runs, on a real Qdrant store on disk.

Each test here was seen to fail on a single mutant of the runner that breaks
its promise (issue 27): a guarantee no other test held.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest
from embedding_http._server import EmbeddingServer
from incremental._corpus import write_corpus, write_pipeline
from incremental.test_incremental import stored_chunks

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.executors import LocalExecutor
from ragflow_config.message import TextBlock
from ragflow_config.pipeline import Pipeline, Registry, RunOptions, RunRefused
from ragflow_config.rag import Chunk, QdrantStore, VectorRecord

from .test_run import GOOD, UNSUPPORTED, actions, documents, edit, make_project

IN_PROCESS = RunOptions(workers=0)
Seen = tuple[str, list[tuple[int, dict[str, Any]]]]  # document id, (chunk_index, ragflow state)


class WatchedQdrant(QdrantStore):
    """Qdrant that writes one record at a time, as a store without batches does, and after
    every write reads the document back: what a concurrent search or listing would find."""

    seen: ClassVar[list[Seen]] = []

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        for record in records:  # in the order given: the order that promise is about
            await super().insert(collection, [record])
            await self._look(collection, record.document_id)

    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        await super().delete(collection, document_id, metadata_filter)
        await self._look(collection, document_id)

    async def _look(self, collection: str, document_id: str) -> None:
        chunks = await self.list_chunks(collection, document_id, limit=10_000)
        WatchedQdrant.seen.append(
            (document_id, [(c.chunk_index, c.metadata["ragflow"]) for c in chunks])
        )


@pytest.fixture
def watched(tmp_path: Path) -> Pipeline:
    """Six documents of one to several chunks each, in a store watched at every write."""
    registry = Registry.from_entry_points()
    registry.register("vector_store", "watched_qdrant", WatchedQdrant)
    WatchedQdrant.seen = []
    write_corpus(tmp_path / "corpus", 6)
    path = write_pipeline(
        tmp_path / "pipeline.yaml",
        store_path=tmp_path / "store",
        corpus=tmp_path / "corpus",
        store_type="watched_qdrant",
    )
    return Pipeline.load(path, registry)


def incomplete_versions(seen: list[Seen]) -> list[Seen]:
    """Sightings of a chunk 0 whose recorded version is not wholly stored beside it."""
    wrong = []
    for document_id, chunks in seen:
        state = next((state for index, state in chunks if index == 0), {})
        if "content_hash" in state:  # a chunk 0 that vouches for a version
            present = {index for index, s in chunks if s.get("revision") == state["revision"]}
            if not present >= set(range(state["chunks"])):
                wrong.append((document_id, chunks))
    return wrong


def rewrite_every_file(corpus: Path) -> None:
    """New content for each file, of another length, so updates overwrite, grow and shrink."""
    for number, path in enumerate(sorted(corpus.rglob("*.md"))):
        text = path.read_text(encoding="utf-8")
        path.write_text(text[: len(text) // 2] if number % 2 else text + "\n\n" + text, "utf-8")


async def test_a_reader_never_sees_chunk_0_before_the_rest_of_its_version(
    watched: Pipeline, tmp_path: Path
) -> None:
    await watched.run(options=IN_PROCESS)
    assert max(len(chunks) for _, chunks in WatchedQdrant.seen) > 2  # multi-chunk documents
    assert incomplete_versions(WatchedQdrant.seen) == []

    WatchedQdrant.seen = []
    rewrite_every_file(tmp_path / "corpus")
    report = await watched.run(options=IN_PROCESS)
    assert report.knowledge_bases[0].count("update") == 6
    assert incomplete_versions(WatchedQdrant.seen) == []


async def test_an_updated_document_stays_findable_throughout_its_write(
    watched: Pipeline, tmp_path: Path
) -> None:
    await watched.run(options=IN_PROCESS)
    WatchedQdrant.seen = []
    rewrite_every_file(tmp_path / "corpus")
    report = await watched.run(options=IN_PROCESS)

    assert report.knowledge_bases[0].count("update") == 6
    assert WatchedQdrant.seen
    missing = [document_id for document_id, chunks in WatchedQdrant.seen if not chunks]
    assert missing == []


async def test_excluded_files_and_hidden_folders_stay_out_and_sources_stamp_their_metadata(
    tmp_path: Path,
) -> None:
    pipeline_file = make_project(tmp_path, broken=False)
    edit(
        pipeline_file,
        "      - path: docs\n",
        "      - path: docs\n"
        "        exclude: ['drafts/**', '**/*.bin']\n"
        "        metadata: {team: platform, public: false}\n",
    )
    docs = tmp_path / "docs"
    for hidden in (".git/config", "guide/.cache/notes.md", "drafts/plan.md"):
        (docs / hidden).parent.mkdir(parents=True, exist_ok=True)
        (docs / hidden).write_text("quick brown fox, never to be indexed\n", encoding="utf-8")
    pipeline = Pipeline.load(pipeline_file)

    report = await pipeline.run(options=IN_PROCESS)
    assert actions(report) == dict.fromkeys(GOOD, "add")  # logo.bin excluded: not even listed
    async with pipeline.build() as built:
        kb = built.knowledge_base("docs")
        summaries = await kb.list_documents()
        chunks = [
            chunk for s in summaries for chunk in await kb.list_chunks(s.document_id, limit=100)
        ]
        hits = await kb.search(["quick brown fox never to be indexed"], top_k=10)
    assert sorted(s.source for s in summaries) == sorted(GOOD)
    assert {hit.chunk.source for hit in hits} <= set(GOOD)
    for chunk in chunks + [hit.chunk for hit in hits]:
        assert (chunk.metadata.get("team"), chunk.metadata.get("public")) == ("platform", False)


async def test_a_document_stored_without_runner_state_is_rewritten_from_its_file(
    tmp_path: Path,
) -> None:
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))
    await pipeline.run(options=IN_PROCESS)
    before = await stored_chunks(pipeline)
    async with pipeline.build() as built:  # another program writes under the runner's id
        kb = built.knowledge_base("docs")
        [fox] = [s for s in await kb.list_documents() if s.source == "fox.md"]
        await kb.delete_document(fox.document_id)
        note = Chunk(
            content=TextBlock(text="not what fox.md says"),
            source="fox.md",
            chunk_index=0,
            total_chunks=1,
        )
        await kb.insert_document([note], document_id=fox.document_id)

    for options in (RunOptions(workers=0, dry_run=True), IN_PROCESS):  # plan, then repair
        report = await pipeline.run(options=options)
        [change] = [c for c in report.knowledge_bases[0].changes if c.path == "fox.md"]
        assert (change.action, change.reason) == ("repair", "stored without ragflow state")
    assert await stored_chunks(pipeline) == before


async def test_a_plan_before_the_first_run_creates_no_collection(tmp_path: Path) -> None:
    """A plan writes nothing: not even the empty collection that listing would create."""
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))
    report = await pipeline.run(options=RunOptions(workers=0, dry_run=True))
    assert {c.action for c in report.knowledge_bases[0].changes} >= {"add"}
    async with pipeline.build() as built:
        kb = built.knowledge_base("docs")
        assert await kb.vector_store.collection_dimensions(kb.collection) is None
    await pipeline.run(options=IN_PROCESS)  # and the run after it adds what the plan said
    assert set(await documents(pipeline)) == set(GOOD)


async def test_with_prune_off_by_default_a_gone_file_keeps_its_document(tmp_path: Path) -> None:
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))  # the file sets no `prune`
    await pipeline.run(options=IN_PROCESS)
    before = await stored_chunks(pipeline)
    stored = (await documents(pipeline))["guide/sorting.txt"]
    (tmp_path / "docs" / "guide" / "sorting.txt").unlink()

    for options in (RunOptions(workers=0, dry_run=True), IN_PROCESS):
        report = await pipeline.run(options=options)
        [change] = [c for c in report.knowledge_bases[0].changes if c.path == "guide/sorting.txt"]
        assert (change.action, change.reason, change.document_id) == (
            "keep",
            "source file is gone; prune is off",
            stored.document_id,
        )
        assert not report.pending
    assert await stored_chunks(pipeline) == before


PIPELINE = """\
version: 1
vector_stores:
  disk: {{type: qdrant, parameters: {{path: store}}}}
embeddings:
  remote:
    type: openai_compatible
    parameters: {{base_url: "{url}", model: {model}, dimensions: 8}}
knowledge_bases:
  - name: docs
    sources: [{{path: docs}}]
    parsers: [{{type: text, parameters: {{encoding: {encoding}}}}}]
    embedding: remote
    vector_store: disk
    collection: docs
"""
MENU = {"menu.md": "Café au lait, crème brûlée.\n", "fox.md": GOOD["fox.md"]}


def remote_project(folder: Path, server: EmbeddingServer, model: str, encoding: str) -> Pipeline:
    (folder / "docs").mkdir(exist_ok=True)
    for name, text in MENU.items():
        (folder / "docs" / name).write_text(text, encoding="utf-8")
    path = folder / "pipeline.yaml"
    path.write_text(PIPELINE.format(url=server.url, model=model, encoding=encoding), "utf-8")
    return Pipeline.load(path)


async def test_another_embedding_model_of_the_same_size_reembeds_every_document(
    tmp_path: Path, embedding_server: EmbeddingServer
) -> None:
    await remote_project(tmp_path, embedding_server, "embed-small", "utf-8").run(options=IN_PROCESS)
    embedding_server.requests.clear()

    larger = remote_project(tmp_path, embedding_server, "embed-large", "utf-8")
    [kb] = (await larger.run(options=IN_PROCESS)).knowledge_bases
    assert kb.fingerprint_changes == ["embedding"]
    assert {(c.path, c.action, c.reason) for c in kb.changes} == {
        (name, "update", "pipeline changed: embedding") for name in MENU
    }
    embedded = [text for seen in embedding_server.requests for text in seen.body["input"]]
    assert sorted(embedded) == sorted(text.strip() for text in MENU.values())
    assert {seen.body["model"] for seen in embedding_server.requests} == {"embed-large"}


async def test_changed_parser_parameters_reparse_every_document(
    tmp_path: Path, embedding_server: EmbeddingServer
) -> None:
    misread = remote_project(tmp_path, embedding_server, "embed-small", "latin-1")
    await misread.run(options=IN_PROCESS)
    assert (await stored_chunks(misread))["menu.md"] == [(0, "CafÃ© au lait, crÃ¨me brÃ»lÃ©e.")]

    fixed = remote_project(tmp_path, embedding_server, "embed-small", "utf-8")
    [kb] = (await fixed.run(options=IN_PROCESS)).knowledge_bases
    assert kb.fingerprint_changes == ["parsers"]
    assert {c.action for c in kb.changes} == {"update"}
    assert (await stored_chunks(fixed))["menu.md"] == [(0, "Café au lait, crème brûlée.")]


async def test_two_parts_changed_at_once_are_both_named_on_every_document(
    tmp_path: Path, embedding_server: EmbeddingServer
) -> None:
    await remote_project(tmp_path, embedding_server, "embed-small", "latin-1").run(
        options=IN_PROCESS
    )
    both = remote_project(tmp_path, embedding_server, "embed-large", "utf-8")
    with pytest.raises(RunRefused) as refused:
        await both.run(options=RunOptions(workers=0, on_fingerprint_change="refuse"))
    assert str(refused.value) == (
        "docs: the pipeline changed what produces the vectors (embedding, parsers); "
        "re-run without --refuse-on-fingerprint-change to re-index every document"
    )
    [kb] = (await both.run(options=IN_PROCESS)).knowledge_bases
    assert kb.fingerprint_changes == ["embedding", "parsers"]
    assert {(c.path, c.action, c.reason) for c in kb.changes} == {
        (name, "update", "pipeline changed: embedding, parsers") for name in MENU
    }


class MirroredHashing(HashingEmbeddingModel):
    """A plugin's model under the built-in's model name and size, with other vectors:
    as two providers' clients serving one model name may differ in what they return."""

    embedded: ClassVar[list[str]] = []

    def embed_text(self, text: str) -> list[float]:
        MirroredHashing.embedded.append(text)
        return [-x for x in super().embed_text(text)]


async def test_another_model_type_of_the_same_name_and_size_reembeds_every_document(
    tmp_path: Path,
) -> None:
    pipeline_file = make_project(tmp_path, broken=False)
    registry = Registry.from_entry_points()
    registry.register("embedding", "mirrored_hashing", MirroredHashing)
    await Pipeline.load(pipeline_file, registry).run(options=IN_PROCESS)

    edit(pipeline_file, "type: hashing", "type: mirrored_hashing")
    MirroredHashing.embedded = []
    [kb] = (await Pipeline.load(pipeline_file, registry).run(options=IN_PROCESS)).knowledge_bases
    assert kb.fingerprint_changes == ["embedding"]
    assert {(c.path, c.action, c.reason) for c in kb.changes if c.action != "unsupported"} == {
        (name, "update", "pipeline changed: embedding") for name in GOOD
    }
    assert sorted(MirroredHashing.embedded) == sorted(
        text
        for chunks in (await stored_chunks(Pipeline.load(pipeline_file, registry))).values()
        for _, text in chunks
    )


class UnstartableExecutor(LocalExecutor):
    """The pipeline file's executor, which a run naming another must leave alone."""

    def start(self, plans: Sequence[Any], workers: int | None) -> None:
        raise AssertionError("the pipeline's own executor started")


async def test_the_executor_a_run_names_replaces_the_pipeline_s_execution_block(
    tmp_path: Path,
) -> None:
    pipeline_file = make_project(tmp_path, broken=False)
    with pipeline_file.open("a", encoding="utf-8") as appended:
        appended.write("execution: {type: unstartable}\n")
    registry = Registry.from_entry_points()
    registry.register("executor", "unstartable", UnstartableExecutor)
    pipeline = Pipeline.load(pipeline_file, registry)

    report = await pipeline.run(options=RunOptions(executor="local", workers=0))
    assert actions(report) == {**dict.fromkeys(GOOD, "add"), UNSUPPORTED: "unsupported"}
    with pytest.raises(AssertionError, match="own executor started"):
        await pipeline.run(options=IN_PROCESS)
