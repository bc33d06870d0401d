"""`ragflow-config copy --from`: a knowledge base moved to another store without its model.

Real engines on both sides (Qdrant's local mode and PostgreSQL + pgvector);
while copying, the hashing model's embedding raises, so a copy that would
call it fails instead of passing unnoticed.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from array import array
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from ragflow_config.cli import main
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.pipeline import (
    CopyRefused,
    CopyReport,
    Pipeline,
    Registry,
    RunOptions,
    copy_knowledge_base,
    default_registry,
)
from ragflow_config.pipeline._registry import KINDS
from ragflow_config.pipeline._run import STATE_KEY

pytest.importorskip("psycopg", reason="psycopg is not installed (extra: pgvector)")

PIPELINE = """\
version: 1
vector_stores:
  qdrant: {{type: qdrant, parameters: {{path: qdrant}}}}
  qdrant-fresh: {{type: qdrant, parameters: {{path: qdrant-fresh}}}}
  pg: {{type: pgvector, parameters: {{dsn_env: PGVECTOR_DSN}}}}
embeddings:
  model: {{type: {model}, parameters: {{dimensions: {dimensions}}}}}
knowledge_bases:
{knowledge_bases}
"""

KNOWLEDGE_BASE = """\
  - name: {name}
    sources: [{{path: {folder}}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 24, overlap: 4}}}}
    embedding: model
    vector_store: {store}
    collection: {collection}
    # RRF fuses ranks alone, so two engines' hybrid scores are the very same numbers.
    retrieval: {{mode: {mode}, fusion: {{method: rrf}}}}
"""

TOPICS = {
    "lists.md": "Sorting a list of objects by an attribute uses a key function.",
    "logging.md": "Logging writes messages to a file through a handler and a formatter.",
    "regex.md": "A regular expression group captures the text it matched.",
    "urls.md": "Opening a URL returns a response whose body can be read as bytes.",
    "descriptors.md": "Descriptors define how attribute access looks a name up on a class.",
    "files.md": "Opening a file in text mode decodes its bytes with an encoding.",
}
QUERIES = ["sort a list by attribute", "write log messages to a file", "read a URL response"]


def write_corpus(folder: Path, topics: dict[str, str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, sentence in topics.items():
        # Several paragraphs, so each document has several chunks.
        paragraphs = [f"{sentence} Part {i} of {name} adds words of its own." for i in range(5)]
        (folder / name).write_text("\n\n".join(paragraphs), encoding="utf-8")


class Project:
    """A pipeline file in a folder of its own, rewritten to point its knowledge bases elsewhere."""

    def __init__(self, root: Path, *, collection: str | None = None) -> None:
        self.root = root
        self.path = root / "pipeline.yaml"
        self.collection = collection or f"copy_{uuid.uuid4().hex[:12]}"
        write_corpus(root / "docs", TOPICS)

    def write(
        self,
        store: str,
        *,
        mode: str = "hybrid",
        dimensions: int = 64,
        model: str = "hashing",
        knowledge_bases: dict[str, dict[str, Any]] | None = None,
    ) -> Path:
        """The file with every knowledge base on ``store``; ``knowledge_bases`` maps a name to
        the keys it adds (``metadata_filter``) or overrides (``folder``)."""
        blocks = []
        for name, extra in (knowledge_bases or {"docs": {}}).items():
            block = KNOWLEDGE_BASE.format(
                name=name,
                folder=extra.get("folder", "docs"),
                store=store,
                collection=self.collection,
                mode=mode,
            )
            if "metadata_filter" in extra:
                block += f"    metadata_filter: {json.dumps(extra['metadata_filter'])}\n"
            blocks.append(block)
        self.path.write_text(
            PIPELINE.format(model=model, dimensions=dimensions, knowledge_bases="".join(blocks)),
            encoding="utf-8",
        )
        return self.path

    def load(self, registry: Registry | None = None) -> Pipeline:
        return Pipeline.load(self.path, registry)


@pytest.fixture
def project(tmp_path: Path, pgvector_dsn: str, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.setenv("PGVECTOR_DSN", pgvector_dsn)
    return Project(tmp_path)


@contextmanager
def model_forbidden() -> Iterator[None]:
    """The hashing model raises if asked for a vector: in this process, whatever the path."""

    def refuse(self: HashingEmbeddingModel, text: str) -> list[float]:
        raise AssertionError(f"the embedding model was called (for {text[:30]!r})")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(HashingEmbeddingModel, "embed_text", refuse)
        yield


async def copy_without_model(project: Project, name: str, source: str) -> CopyReport:
    pipeline = project.load()
    with model_forbidden():
        return await copy_knowledge_base(pipeline, name, source)


Snapshot = dict[str, list[tuple[dict[str, Any], bytes]]]


async def snapshot(project: Project, name: str = "docs") -> Snapshot:
    """Every document's chunks (as stored) and vectors (as float32 bytes), by chunk index."""
    async with project.load().build([name]) as built:
        kb = built.knowledge_base(name)
        result: Snapshot = {}
        for summary in await kb.list_documents():
            records = sorted(
                await kb.document_vectors(summary.document_id), key=lambda r: r[0].chunk_index
            )
            result[summary.document_id] = [
                (chunk.model_dump(mode="json"), array("f", vector).tobytes())
                for chunk, vector in records
            ]
        return result


Hits = list[list[tuple[str, int, float]]]


async def search_all(project: Project, store: str) -> tuple[Hits, Hits]:
    """Each query's hits in hybrid mode (the file's), then in dense mode alone."""
    found = []
    for mode in ("dense", "hybrid"):  # the file is left as it was: hybrid
        project.write(store, mode=mode)
        async with project.load().build(["docs"]) as built:
            kb = built.knowledge_base("docs")
            found.append(
                [
                    [
                        (h.document_id, h.chunk.chunk_index, h.score)
                        # Every chunk in dense mode, so ties at a cut cannot differ.
                        for h in await kb.search([q], top_k=5 if mode == "hybrid" else 1000)
                    ]
                    for q in QUERIES
                ]
            )
    return found[1], found[0]


def same_hits(found: Hits, expected: Hits) -> bool:
    """Each chunk scored alike (two engines round cosines apart, and order ties their own way)."""
    scores = [{(d, i): score for d, i, score in hits} for hits in found]
    wanted = [{(d, i): score for d, i, score in hits} for hits in expected]
    return [set(s) for s in scores] == [set(w) for w in wanted] and all(
        s == pytest.approx(w, abs=1e-6) for s, w in zip(scores, wanted, strict=True)
    )


async def index(project: Project) -> None:
    report = await project.load().run(options=RunOptions(workers=0))
    assert not report.failed and report.knowledge_bases[0].chunks > 0


async def verify(project: Project, capsys: pytest.CaptureFixture[str]) -> str:
    """What `ragflow-config verify` prints (the CLI runs its own event loop: in a thread)."""
    capsys.readouterr()
    assert await asyncio.to_thread(main, ["verify", str(project.path)]) == 0
    return capsys.readouterr().out


def chunk_count(state: Snapshot) -> int:
    return sum(len(chunks) for chunks in state.values())


async def test_a_copy_to_pgvector_and_back_holds_the_same_records_and_finds_the_same_hits(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write("qdrant")
    await index(project)
    original = await snapshot(project)
    hybrid, dense = await search_all(project, "qdrant")
    assert len(original) == len(TOPICS) and all(len(c) > 1 for c in original.values())

    project.write("pg")
    report = await copy_without_model(project, "docs", "qdrant")
    assert (report.copied, report.replaced, report.skipped) == (len(TOPICS), 0, 0)
    assert report.chunks == chunk_count(original) and not report.left_out
    assert await snapshot(project) == original  # payloads equal, vectors bit for bit
    assert f"docs: {len(TOPICS)} documents in sync, 0 drifted" in await verify(project, capsys)
    pg_hybrid, pg_dense = await search_all(project, "pg")
    assert pg_hybrid == hybrid  # fused by rank: the very same scores
    assert same_hits(pg_dense, dense)

    again = await copy_without_model(project, "docs", "qdrant")
    assert (again.copied, again.skipped, again.chunks) == (0, len(TOPICS), 0)

    project.write("qdrant-fresh")
    back = await copy_without_model(project, "docs", "pg")
    assert (back.copied, back.chunks) == (len(TOPICS), chunk_count(original))
    assert await snapshot(project) == original
    assert f"docs: {len(TOPICS)} documents in sync, 0 drifted" in await verify(project, capsys)
    fresh_hybrid, fresh_dense = await search_all(project, "qdrant-fresh")
    # Equal vectors, yet a score may differ in its last bits: Qdrant's local mode
    # computes a batch of similarities at once, and the batch follows the points' order.
    assert fresh_hybrid == hybrid and same_hits(fresh_dense, dense)


async def test_an_interrupted_copy_writes_only_what_is_missing_when_run_again(
    project: Project,
) -> None:
    project.write("qdrant")
    await index(project)
    original = await snapshot(project)
    project.write("pg")
    await copy_without_model(project, "docs", "qdrant")

    # What a kill leaves: one document without its chunk 0 (written last), one not begun.
    headless, missing = sorted(original)[:2]
    async with project.load().build(["docs"]) as built:
        kb = built.knowledge_base("docs")
        state = original[headless][0][0]["metadata"][STATE_KEY]
        chunk_0 = {STATE_KEY: {"content_hash": state["content_hash"]}}
        await kb.delete_document(headless, where=chunk_0)
        await kb.delete_document(missing)
        held = {s.document_id: s.chunk_count for s in await kb.list_documents()}
    assert held[headless] == len(original[headless]) - 1 and missing not in held

    report = await copy_without_model(project, "docs", "qdrant")
    assert (report.copied, report.replaced, report.skipped) == (2, 1, len(TOPICS) - 2)
    assert report.chunks == len(original[headless]) + len(original[missing])
    assert await snapshot(project) == original


async def test_a_document_the_source_holds_incomplete_is_left_out_and_named(
    project: Project,
) -> None:
    project.write("qdrant")
    await index(project)
    original = await snapshot(project)
    headless = sorted(original)[0]
    async with project.load().build(["docs"]) as built:  # a run killed while writing it
        state = original[headless][0][0]["metadata"][STATE_KEY]
        chunk_0 = {STATE_KEY: {"content_hash": state["content_hash"]}}
        await built.knowledge_base("docs").delete_document(headless, where=chunk_0)

    project.write("pg")
    report = await copy_without_model(project, "docs", "qdrant")
    assert report.copied == len(TOPICS) - 1
    [left] = report.left_out
    assert left.document_id == headless
    assert left.reason == "chunk 0 is missing in the source: a write was interrupted"
    copied = await snapshot(project)
    assert copied == {k: v for k, v in original.items() if k != headless}


async def test_a_copy_takes_only_its_own_scope_of_a_shared_collection(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    write_corpus(project.root / "b-docs", {"other.md": "Tenant b keeps its own notes here."})
    tenants: dict[str, dict[str, Any]] = {
        "a": {"metadata_filter": {"tenant": "a"}},
        "b": {"metadata_filter": {"tenant": "b"}, "folder": "b-docs"},
    }
    project.write("qdrant", mode="dense", knowledge_bases=tenants)
    assert (await project.load().run(options=RunOptions(workers=0))).failed is False
    a_records = await snapshot(project, "a")
    assert len(a_records) == len(TOPICS) and len(await snapshot(project, "b")) == 1

    project.write("pg", mode="dense", knowledge_bases=tenants)
    report = await copy_without_model(project, "a", "qdrant")
    assert report.copied == len(TOPICS)
    assert await snapshot(project, "a") == a_records
    assert await snapshot(project, "b") == {}  # b's records stayed behind
    async with project.load().build(["a"]) as built:
        store = built.knowledge_base("a").vector_store
        everything = await store.list_documents(project.collection)  # no scope: all of it
    assert sorted(s.document_id for s in everything) == sorted(a_records)
    assert all(s.metadata["tenant"] == "a" for s in everything)


async def test_a_store_the_file_does_not_define_is_refused_with_the_names_it_does(
    project: Project,
) -> None:
    project.write("pg")
    with pytest.raises(CopyRefused, match=r"no vector store named 'qdrnt' \(defined: qdrant, "):
        await copy_knowledge_base(project.load(), "docs", "qdrnt")


async def test_the_knowledge_bases_own_store_is_refused(project: Project) -> None:
    project.write("pg")
    with pytest.raises(CopyRefused, match="docs already uses the store 'pg'"):
        await copy_knowledge_base(project.load(), "docs", "pg")


async def test_a_source_without_the_collection_or_the_scope_is_refused(project: Project) -> None:
    project.write("pg")
    with pytest.raises(CopyRefused, match=r"store 'qdrant' has no collection 'copy_\w+'"):
        await copy_knowledge_base(project.load(), "docs", "qdrant")

    tenants = {"a": {"metadata_filter": {"tenant": "a"}}}
    project.write("qdrant", knowledge_bases=tenants)
    await index(project)
    project.write("pg", knowledge_bases={"c": {"metadata_filter": {"tenant": "c"}}})
    with pytest.raises(CopyRefused, match="holds no document of c within its metadata_filter"):
        await copy_knowledge_base(project.load(), "c", "qdrant")


async def test_a_source_of_other_dimensions_is_refused_naming_the_embedding(
    project: Project,
) -> None:
    project.write("qdrant", dimensions=32)
    await index(project)
    project.write("pg", dimensions=64)
    with pytest.raises(CopyRefused, match=r"32-dimensional .* 64-dimensional ones: the embedding"):
        await copy_without_model(project, "docs", "qdrant")
    await assert_nothing_written(project)


class OtherHashing(HashingEmbeddingModel):
    """Another model of the same dimensions: only the fingerprint tells its vectors apart."""

    @property
    def model(self) -> str:
        return "hashing-other"


async def test_a_source_of_another_model_is_refused_naming_the_embedding(
    project: Project,
) -> None:
    registry = Registry()
    for kind in KINDS:  # every installed type, and one more model
        for registered in default_registry().types(kind):
            registry.register(registered.kind, registered.name, registered.cls)
    registry.register("embedding", "hashing_other", OtherHashing)
    project.write("qdrant", model="hashing_other")
    report = await project.load(registry).run(options=RunOptions(workers=0))
    assert not report.failed

    project.write("pg")
    with pytest.raises(CopyRefused, match=r"what differs: embedding \(6 of 6 documents\)"):
        await copy_without_model(project, "docs", "qdrant")
    await assert_nothing_written(project)


async def test_a_dense_source_for_a_hybrid_knowledge_base_is_refused_naming_lexical(
    project: Project,
) -> None:
    project.write("qdrant", mode="dense")
    await index(project)
    project.write("pg", mode="hybrid")
    with pytest.raises(
        CopyRefused, match=r"what differs: lexical \(6 of 6 .*use `ragflow-config run`"
    ):
        await copy_without_model(project, "docs", "qdrant")
    await assert_nothing_written(project)


async def assert_nothing_written(project: Project) -> None:
    async with project.load().build(["docs"]) as built:
        kb = built.knowledge_base("docs")
        assert await kb.vector_store.collection_dimensions(kb.collection) is None


def test_the_cli_copies_and_reports_and_refuses_a_wrong_store_with_exit_2(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write("qdrant")
    assert main(["run", str(project.path), "--workers", "0"]) == 0
    project.write("pg")
    capsys.readouterr()

    with model_forbidden():
        assert main(["copy", str(project.path), "docs", "--from", "qdrant", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["documents_copied"] == len(TOPICS) and summary["documents_skipped"] == 0
    assert summary["chunks_written"] > len(TOPICS) and summary["left_out"] == []

    with model_forbidden():
        assert main(["copy", str(project.path), "docs", "--from", "qdrant"]) == 0
    out = capsys.readouterr().out
    assert out == (
        "docs: copied from qdrant: 0 documents copied (0 replacing an incomplete or other "
        f"version), {len(TOPICS)} skipped (already there), 0 chunks written\n"
    )

    assert main(["copy", str(project.path), "docs", "--from", "pg"]) == 2  # its own
    assert "error: docs already uses the store 'pg'" in capsys.readouterr().err
    assert main(["copy", str(project.path), "docs", "--from", "elsewhere", "--json"]) == 2
    error = json.loads(capsys.readouterr().out)["error"]["message"]
    assert error == (
        "pipeline.yaml: no vector store named 'elsewhere' (defined: qdrant, qdrant-fresh, pg)"
    )
