"""A change of what makes the vectors is rebuilt beside the live collection, then switched to.

Through a real Qdrant store on disk, with the hashing model (its seed-free
vectors differ by dimensions, so two sizes are two models).
"""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any, ClassVar

import pytest
from incremental._corpus import write_corpus

from ragflow_config.embedding import EmbeddingInput, HashingEmbeddingModel, vectors_digest
from ragflow_config.pipeline import Pipeline, Registry, RunOptions
from ragflow_config.pipeline._generations import rollback
from ragflow_config.rag import CollectionMismatchError, KnowledgeBase
from ragflow_config.rag._stores._pointer import Generation, Pointer

IN_PROCESS = RunOptions(workers=0)


class Killed(Exception):
    pass


class CountingHashing(HashingEmbeddingModel):
    """The hashing model, counting the texts it embeds."""

    texts: ClassVar[int] = 0

    async def embed_batch(self, inputs: list[EmbeddingInput]) -> Any:
        CountingHashing.texts += len(inputs)
        return await super().embed_batch(inputs)


@pytest.fixture
def registry() -> Registry:
    registry = Registry.from_entry_points()
    registry.register("embedding", "counting_hashing", CountingHashing)
    CountingHashing.texts = 0
    return registry


def project(
    tmp_path: Path,
    registry: Registry,
    *,
    dimensions: int = 64,
    chunk_size: int = 64,
    keep_previous: int = 1,
    tenants: bool = False,
) -> Pipeline:
    """A pipeline over ``tmp_path/corpus`` into Qdrant at ``tmp_path/store``."""
    if not (tmp_path / "corpus").exists():
        write_corpus(tmp_path / "corpus", 12)
    kb = """\
      - name: {name}
        sources: [{{path: corpus}}]
        chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 8}}}}
        embedding: model
        vector_store: store
        collection: docs
        keep_previous: {keep_previous}
        {scope}
    """
    names = [("docs", "metadata_filter: {tenant: a}" if tenants else "")]
    if tenants:
        names.append(("other", "metadata_filter: {tenant: b}"))
    bases = "".join(
        textwrap.indent(
            textwrap.dedent(kb).format(
                name=name, chunk_size=chunk_size, keep_previous=keep_previous, scope=scope
            ),
            "  ",
        )
        for name, scope in names
    )
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        version: 1
        vector_stores:
          store: {{type: qdrant, parameters: {{path: store}}}}
        embeddings:
          model: {{type: counting_hashing, parameters: {{dimensions: {dimensions}}}}}
        knowledge_bases:
        """)
        + bases,
        encoding="utf-8",
    )
    return Pipeline.load(path, registry)


async def hits(pipeline: Pipeline, query: str = "river lantern", kb: str = "docs") -> list[Any]:
    """What a search through the knowledge base's pointer finds: (source, chunk, score)."""
    async with pipeline.build([kb]) as built:
        found = await built.knowledge_bases[kb].search([query], top_k=8)
        return [(h.chunk.source, h.chunk.chunk_index, round(h.score, 6)) for h in found]


async def handle(pipeline: Pipeline, kb: str = "docs") -> tuple[KnowledgeBase, Any]:
    built = pipeline.build([kb])
    entered = await built.__aenter__()
    return entered.knowledge_bases[kb], built


async def test_a_model_change_builds_beside_and_switches_the_pointer(
    tmp_path: Path, registry: Registry
) -> None:
    old = project(tmp_path, registry, dimensions=64)
    first = (await old.run(options=IN_PROCESS)).knowledge_bases[0]
    assert first.rebuild is None  # a first run builds in place, in `docs`
    before = await hits(old)

    new = project(tmp_path, registry, dimensions=32)
    plan = (await new.run(options=RunOptions(workers=0, dry_run=True))).knowledge_bases[0]
    assert plan.rebuild is not None and not plan.rebuild.switched
    assert (plan.rebuild.live, plan.rebuild.changed) == (
        "docs",
        ["embedding", "dimensions 64 -> 32"],
    )
    assert plan.rebuild.chunks_to_embed == first.chunks
    assert plan.count("update") == 12
    assert await hits(old) == before  # a plan writes nothing

    report = (await new.run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.rebuild is not None and report.rebuild.switched
    assert report.count("update") == 12 and report.chunks == first.chunks
    assert report.rebuild.target.startswith("docs__")

    async with new.build() as built:
        kb = built.knowledge_bases["docs"]
        pointer = await kb.read_pointer()
        assert pointer is not None
        assert [g.collection for g in pointer.generations] == [report.rebuild.target, "docs"]
        assert await kb.live_collection() == report.rebuild.target
        assert await kb.vector_store.collection_dimensions(report.rebuild.target) == 32
        assert await kb.vector_store.collection_dimensions("docs") == 64  # kept, untouched
    after = await hits(new)
    assert after and after != before
    # A handle made from the old pipeline goes on reading what its model built.
    assert await hits(old) == before

    again = (await new.run(options=IN_PROCESS)).knowledge_bases[0]
    assert again.rebuild is None and again.count("unchanged") == 12


async def test_rollback_restores_the_previous_results_and_the_next_run_switches_back(
    tmp_path: Path, registry: Registry
) -> None:
    old = project(tmp_path, registry, chunk_size=64)
    await old.run(options=IN_PROCESS)
    before = await hits(old)
    new = project(tmp_path, registry, chunk_size=32)
    await new.run(options=IN_PROCESS)
    after = await hits(new)
    assert after != before

    kb, built = await handle(new)
    try:
        rolled = await rollback(kb)
    finally:
        await built.__aexit__(None, None, None)
    assert rolled.live.collection == "docs"
    assert await hits(new) == before  # same model: the handle follows the pointer back

    CountingHashing.texts = 0
    report = (await new.run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.rebuild is not None and report.rebuild.switched
    assert CountingHashing.texts == 0  # the kept rebuild is complete: switched to, not re-embedded
    assert await hits(new) == after


async def test_a_reverted_change_switches_back_to_the_kept_collection_without_embedding(
    tmp_path: Path, registry: Registry
) -> None:
    # Issue 52, trap 2: chunk_size 64 -> 32 -> 64 embeds nothing on the way back, and the
    # kept collection (here the one built in place, before any pointer) is switched to,
    # not deleted.
    await project(tmp_path, registry, chunk_size=64).run(options=IN_PROCESS)
    smaller = await project(tmp_path, registry, chunk_size=32).run(options=IN_PROCESS)
    [smaller_report] = smaller.knowledge_bases
    assert smaller_report.rebuild is not None and smaller_report.rebuild.switched
    back = project(tmp_path, registry, chunk_size=64)
    embedded = CountingHashing.texts
    [plan] = (await back.run(options=RunOptions(workers=0, dry_run=True))).knowledge_bases
    assert plan.rebuild is not None and plan.rebuild.kept
    assert plan.rebuild.target == "docs" and plan.rebuild.chunks_to_embed == 0
    [report] = (await back.run(options=IN_PROCESS)).knowledge_bases
    assert report.rebuild is not None and report.rebuild.switched and report.rebuild.kept
    assert report.rebuild.retired == [] and report.count("unchanged") == 12
    assert CountingHashing.texts == embedded  # not one text embedded
    kb, built = await handle(back)
    try:
        pointer = await kb.read_pointer()
        assert pointer is not None
        assert [g.collection for g in pointer.generations] == [
            "docs",
            smaller_report.rebuild.target,
        ]
    finally:
        await built.__aexit__(None, None, None)


async def test_keep_previous_bounds_the_collections_kept(
    tmp_path: Path, registry: Registry
) -> None:
    await project(tmp_path, registry, chunk_size=64, keep_previous=1).run(options=IN_PROCESS)
    second = project(tmp_path, registry, chunk_size=48, keep_previous=1)
    two = (await second.run(options=IN_PROCESS)).knowledge_bases[0].rebuild
    third = project(tmp_path, registry, chunk_size=32, keep_previous=1)
    three = (await third.run(options=IN_PROCESS)).knowledge_bases[0].rebuild
    assert two is not None and three is not None
    assert three.retired == ["docs"]
    kb, built = await handle(third)
    try:
        pointer = await kb.read_pointer()
        assert pointer is not None
        assert [g.collection for g in pointer.generations] == [three.target, two.target]
        assert not pointer.retiring and pointer.building is None
        assert not await kb.vector_store.has_collection("docs")
    finally:
        await built.__aexit__(None, None, None)

    none_kept = project(tmp_path, registry, chunk_size=24, keep_previous=0)
    four = (await none_kept.run(options=IN_PROCESS)).knowledge_bases[0].rebuild
    assert four is not None and sorted(four.retired) == sorted([three.target, two.target])


async def test_an_interrupted_rebuild_leaves_the_live_collection_and_resumes(
    tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    old = project(tmp_path, registry, chunk_size=64)
    await old.run(options=IN_PROCESS)
    before = await hits(old)
    new = project(tmp_path, registry, chunk_size=32)

    calls = written = written_at_kill = 0
    original = KnowledgeBase.insert_document

    async def failing(self: KnowledgeBase, *args: Any, **kwargs: Any) -> str:
        nonlocal calls, written, written_at_kill
        calls += 1
        if calls == 5:
            # A crash mid-run, as far as the run can tell. The writes before it may still
            # be in flight (a local store's calls run on their own thread): the ones that
            # finished are what must stay.
            written_at_kill = written
            raise Killed
        document_id = await original(self, *args, **kwargs)
        written += 1
        return document_id

    monkeypatch.setattr(KnowledgeBase, "insert_document", failing)
    with pytest.raises(Killed):
        await new.run(options=RunOptions(workers=0))
    monkeypatch.setattr(KnowledgeBase, "insert_document", original)

    assert await hits(new) == before  # still the old collection, whole
    kb, built = await handle(new)
    try:
        pointer = await kb.read_pointer()
        assert pointer is not None and pointer.live.collection == "docs"
        assert pointer.building is not None
    finally:
        await built.__aexit__(None, None, None)

    report = (await new.run(options=IN_PROCESS)).knowledge_bases[0]
    assert report.rebuild is not None and report.rebuild.switched
    assert written_at_kill >= 1
    assert report.count("unchanged") >= written_at_kill  # those written before the kill stay
    assert report.count("update") + report.count("unchanged") == 12


async def test_a_failed_file_keeps_the_live_collection(tmp_path: Path, registry: Registry) -> None:
    old = project(tmp_path, registry, chunk_size=64)
    await old.run(options=IN_PROCESS)
    before = await hits(old)
    (tmp_path / "corpus" / "part0" / "doc000.md").write_bytes(b"\xff\xfe not utf-8 \xff")
    new = project(tmp_path, registry, chunk_size=32)
    result = await new.run(options=IN_PROCESS)
    report = result.knowledge_bases[0]
    assert report.rebuild is not None and not report.rebuild.switched
    assert report.rebuild.blocked.startswith("1 of 12 file(s) failed (8.3%), 1 of which")
    assert report.rebuild.blocked.endswith("; the live collection docs stays live")
    assert result.failed
    assert await hits(old) == before


async def test_tenants_sharing_a_collection_switch_on_their_own(
    tmp_path: Path, registry: Registry
) -> None:
    await project(tmp_path, registry, chunk_size=64, tenants=True).run(options=IN_PROCESS)
    other_before = await hits(project(tmp_path, registry, tenants=True), kb="other")

    new = project(tmp_path, registry, chunk_size=32, tenants=True)
    result = await new.run(["docs"], options=IN_PROCESS)
    assert result.knowledge_bases[0].rebuild is not None
    assert await hits(new, kb="other") == other_before  # `other` still reads `docs` in place

    third = project(tmp_path, registry, chunk_size=24, keep_previous=0, tenants=True)
    await third.run(["docs"], options=IN_PROCESS)  # retires `docs` for tenant a only
    assert await hits(third, kb="other") == other_before


async def test_a_collection_the_pointer_names_is_never_created_by_a_reader(
    tmp_path: Path, registry: Registry
) -> None:
    """A search that read the pointer just before a switch deleted its collection fails
    and may be retried; it must not create the collection again, empty."""
    pipeline = project(tmp_path, registry)
    await pipeline.run(options=IN_PROCESS)
    kb, built = await handle(pipeline)
    try:
        store = kb.vector_store
        live = (await kb.read_pointer()) or Pointer(
            generations=[
                Generation(collection="docs__gone", embedding=vectors_digest(kb.embedding_model))
            ]
        )
        await store.write_pointer(kb.pointer_name, live)
        with pytest.raises(
            CollectionMismatchError, match="'docs__gone', which its pointer named, is gone"
        ):
            await kb.search(["river"])
        assert not await store.has_collection("docs__gone")
        assert await kb.pinned("docs").search(["river"])  # the handle itself is fine
    finally:
        await built.__aexit__(None, None, None)
