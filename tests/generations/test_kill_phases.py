"""A SIGKILL at every phase of a rebuild beside the live collection leaves the pointer on a
complete collection, and the next run converges.

Three generations of one knowledge base (chunk sizes 64, 48, 32; keep_previous 1):
the first run builds ``docs_…`` in place, the second rebuilds it beside as B and
switches, the third rebuilds C beside B, switches, and retires the original. One
of the rebuilds (``ragflow-config run``) runs in a process of its own, through a
store plugin installed the way a third-party package is (see
``tests/_killing.py``), which kills its own process with SIGKILL at one point
of the rebuild:

- ``building``: inside the 5th document write into the new collection, half of
  its records written;
- ``verifying``: when the run lists the new collection after its last write,
  to check it;
- ``switching`` / ``switched``: just before / just after the pointer write
  that makes the new collection live;
- ``deleting`` / ``deleted``: just before / just after the retiring collection
  is dropped (the pointer still lists it as retiring).

The kill is the process's own, at that call: the state a SIGKILL from outside
would leave at that moment. Then, from a fresh process state: the pointer's live
collection holds every file whole, all built by one fingerprint, and searches
answer as a fully built generation (the old one before the switch write, the new
one after it). A plain run then converges: the new collection is live, the
previous one kept, the original gone, nothing building or retiring, a further
run finds every document unchanged, and the searches and stored chunks equal a
never-killed build of the same pipeline into another store.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import pytest
from _killing import KILLING_STORES, install_killing_stores, run_killed
from incremental._corpus import write_corpus

from ragflow_config.message import TextBlock
from ragflow_config.pipeline import Pipeline, RunOptions
from ragflow_config.pipeline._generations import complete, state, target_name
from ragflow_config.pipeline._run import fingerprint
from ragflow_config.rag import Chunk, DocumentSummary
from ragflow_config.rag._stores._pointer import Pointer

IN_PROCESS = RunOptions(workers=0)
FILES = 12
CHUNK_SIZES = (64, 48, 32)  # three generations: each change of the chunker rebuilds beside
QUERIES = ["river lantern", "glacier summit beacon", "copper meadow falcon", "willow canyon"]

# The stores' `killing(base)` (see _killing.install_killing_stores).
PLUGIN = '''
PHASE = os.environ.get("RAGFLOW_TEST_KILL_PHASE", "")
MARKER = os.environ.get("RAGFLOW_TEST_KILL_MARKER", "")


def die(phase, writes):
    if phase == PHASE:
        Path(MARKER).write_text(f"{phase} after {writes} writes", encoding="utf-8")
        os.kill(os.getpid(), signal.SIGKILL)


def killing(base):
    class KillingStore(base):
        """Kills its process at the phase RAGFLOW_TEST_KILL_PHASE names (see the test)."""

        target = None  # the collection the rebuild fills, from its `begin` pointer write
        writes = 0
        switched = False

        async def write_pointer(self, name, pointer):
            if pointer.building is not None:
                self.target = pointer.building.collection
            switching = (
                pointer.building is None
                and not self.switched
                and pointer.live.collection == self.target
            )
            if switching:
                die("switching", self.writes)
            await super().write_pointer(name, pointer)
            if switching:
                self.switched = True
                die("switched", self.writes)

        async def insert(self, collection, records):
            if collection == self.target:
                self.writes += 1
                if self.writes == 5 and PHASE == "building":
                    await super().insert(collection, records[: len(records) // 2])
                    die("building", 5)  # other writes may have started meanwhile
            await super().insert(collection, records)

        async def list_documents(self, collection, metadata_filter=None):
            if collection == self.target and self.writes and not self.switched:
                die("verifying", self.writes)
            return await super().list_documents(collection, metadata_filter)

        async def delete_collection(self, name):
            # Any drop after the switch: what it retires, whether the pointer lists it or not.
            retiring = self.switched and name != self.target
            if retiring:
                die("deleting", self.writes)
            await super().delete_collection(name)
            if retiring:
                die("deleted", self.writes)

    return KillingStore
'''

PIPELINE = """\
version: 1
vector_stores:
  store: {{type: {store_type}, parameters: {{{parameters}}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: 64}}}}
knowledge_bases:
  - name: docs
    sources: [{{path: corpus}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 8}}}}
    embedding: model
    vector_store: store
    collection: {collection}
    keep_previous: 1
"""

# (the run killed: 2 rebuilds A -> B, 3 rebuilds B -> C and retires A; the phase)
CASES = [
    (2, "building"),
    (3, "building"),
    (3, "verifying"),
    (3, "switching"),
    (3, "switched"),
    (3, "deleting"),
    (3, "deleted"),
]
AFTER_THE_SWITCH = {"switched", "deleting", "deleted"}


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_killing_stores(
        tmp_path_factory.mktemp("plugin"), "rebuild_killing_stores", PLUGIN
    )


def write_pipeline(
    folder: Path, name: str, store: str, *, chunk_size: int, collection: str, killing: bool = False
) -> Path:
    """A pipeline file in ``folder`` over ``folder/corpus`` into the store at ``folder/name``."""
    killing_type, parameters = KILLING_STORES[store]
    path = folder / f"{name}-{chunk_size}{'-killing' if killing else ''}.yaml"
    path.write_text(
        PIPELINE.format(
            store_type=killing_type if killing else store,
            parameters=parameters.format(folder=folder / name),
            chunk_size=chunk_size,
            collection=collection,
        ),
        encoding="utf-8",
    )
    return path


@dataclass
class Seen:
    """A knowledge base as a fresh process finds it, through one opening of its store."""

    pointer: Pointer | None
    live: str
    documents: list[DocumentSummary]  # the live collection's, as stored
    answers: list[list[tuple[float, str, int, str]]]  # searches through the pointer
    chunks: dict[str, list[tuple[int, str]]]  # the live collection's, by source
    target: str  # the collection a rebuild by this pipeline fills
    exists: dict[str, bool]

    def assert_whole(self) -> None:
        """Every file is in the live collection whole, and one pipeline built them all."""
        assert len(self.documents) == FILES
        broken = [state(s).get("path", s.document_id) for s in self.documents if not complete(s)]
        assert not broken, f"documents not whole in the live collection {self.live}: {broken}"
        prints = {json.dumps(state(s)["fingerprint"], sort_keys=True) for s in self.documents}
        assert len(prints) == 1, f"the live collection {self.live} mixes fingerprints: {prints}"
        if self.pointer is not None:
            assert state(self.documents[0])["fingerprint"] == self.pointer.live.fingerprint


async def observe(pipeline: Pipeline, collections: Iterable[str] = ()) -> Seen:
    async with pipeline.build() as built:
        kb = built.knowledge_bases["docs"]
        pointer = await kb.read_pointer()
        live = pointer.live.collection if pointer is not None else kb.collection
        answers = []
        for query in QUERIES:
            hits = await kb.search([query], top_k=8)
            answers.append(
                sorted(  # one order whatever the order of ties
                    (-round(h.score, 5), h.chunk.source, h.chunk.chunk_index, text(h.chunk))
                    for h in hits
                )
            )
        chunks = {}
        for summary in await kb.list_documents():
            stored = await kb.list_chunks(summary.document_id, limit=10_000)
            chunks[summary.source] = sorted((c.chunk_index, text(c)) for c in stored)
        plan = built.indexing["docs"]
        store = kb.vector_store
        return Seen(
            pointer=pointer,
            live=live,
            documents=await store.list_documents(live, kb.metadata_filter),
            answers=answers,
            chunks=chunks,
            target=target_name(kb, fingerprint(plan)),
            exists={name: await store.has_collection(name) for name in collections},
        )


def text(chunk: Chunk) -> str:
    assert isinstance(chunk.content, TextBlock)
    return chunk.content.text


@pytest.mark.slow
@pytest.mark.parametrize("store", sorted(KILLING_STORES))
@pytest.mark.parametrize(("killed_run", "phase"), CASES, ids=[f"{r}-{p}" for r, p in CASES])
def test_a_kill_at_any_phase_keeps_a_whole_live_collection_and_converges(
    tmp_path: Path,
    plugin_path: Path,
    store: str,
    killed_run: int,
    phase: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if store == "pgvector":
        monkeypatch.setenv("PGVECTOR_DSN", request.getfixturevalue("pgvector_dsn"))
    write_corpus(tmp_path / "corpus", FILES)
    collection = f"docs_{uuid.uuid4().hex[:8]}"  # pgvector's server is shared by the session
    sizes = CHUNK_SIZES[:killed_run]
    for size in sizes[:-1]:
        path = write_pipeline(tmp_path, "store", store, chunk_size=size, collection=collection)
        asyncio.run(Pipeline.load(path).run(options=IN_PROCESS))
    new = Pipeline.load(
        write_pipeline(tmp_path, "store", store, chunk_size=sizes[-1], collection=collection)
    )
    before = asyncio.run(observe(new))
    before.assert_whole()
    assert before.live != before.target

    killing = write_pipeline(
        tmp_path, "store", store, chunk_size=sizes[-1], collection=collection, killing=True
    )
    marker = tmp_path / "killed-at"
    run_killed(
        killing, plugin_path, RAGFLOW_TEST_KILL_PHASE=phase, RAGFLOW_TEST_KILL_MARKER=str(marker)
    )
    # Killed where meant: mid-way through the writes, or once every file was written.
    writes = 5 if phase == "building" else FILES
    assert marker.read_text(encoding="utf-8") == f"{phase} after {writes} writes"

    # Never killed: the same pipeline built at once, in place, into a store of its own.
    fresh_collection = f"fresh_{uuid.uuid4().hex[:8]}"
    fresh = Pipeline.load(
        write_pipeline(tmp_path, "fresh", store, chunk_size=sizes[-1], collection=fresh_collection)
    )
    asyncio.run(fresh.run(options=IN_PROCESS))
    expected = asyncio.run(observe(fresh))
    assert expected.answers != before.answers  # the two generations answer differently

    # Right after the kill: a whole collection is live, the old one until the switch write.
    switched = phase in AFTER_THE_SWITCH
    killed = asyncio.run(observe(new))
    assert killed.live == (before.target if switched else before.live)
    killed.assert_whole()
    assert killed.answers == (expected.answers if switched else before.answers)
    assert killed.chunks == (expected.chunks if switched else before.chunks)

    # The next run converges, and the one after finds nothing to do.
    report = asyncio.run(new.run(options=IN_PROCESS))
    assert not report.failed
    assert (report.knowledge_bases[0].rebuild is not None) == (not switched)
    retired = [collection] if killed_run == 3 else []  # the first run built it in place
    after = asyncio.run(observe(new, [before.target, before.live, *retired]))
    assert after.pointer is not None and after.live == before.target
    assert [g.collection for g in after.pointer.generations] == [before.target, before.live]
    assert after.pointer.building is None and not after.pointer.retiring
    assert after.exists == {before.target: True, before.live: True, **dict.fromkeys(retired, False)}
    after.assert_whole()
    assert after.answers == expected.answers
    assert after.chunks == expected.chunks
    again = asyncio.run(new.run(options=IN_PROCESS)).knowledge_bases[0]
    assert again.rebuild is None and again.count("unchanged") == FILES and not again.pending
