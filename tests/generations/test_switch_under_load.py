"""A knowledge base served under a continuous search load while a run rebuilds it beside the
live collection and switches (issue 33: 0 mixed result sets and 0 failed searches).

On three real engines: Qdrant local, Milvus Lite and PostgreSQL + pgvector.
A server (the real HTTP app, under uvicorn on a loopback port) answers
searches from several clients in a loop, before, during and after a run of
the changed pipeline file. Every result set is classified by the revisions
its hits carry (a revision digests the file and the fingerprint, so each
collection's revisions are its own): it must come wholly from one
generation, and from the one the pointer made live when the search ran.

Qdrant local's file lock keeps a second client out, even in one process, so
there the servers and the run share one opened store (the pipeline files
still say ``type: qdrant``); Milvus Lite keeps a second process out but lets
two stores of one process share its file, so its servers run in this process
too. For pgvector the servers are `ragflow-config serve` processes, and the
run happens here, as in a deployment.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
import textwrap
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from incremental._corpus import WORDS, write_corpus
from pydantic import SecretStr

from ragflow_config.pipeline import Pipeline, Registry, RunOptions
from ragflow_config.pipeline._registry import KINDS
from ragflow_config.pipeline._run import KnowledgeBaseReport
from ragflow_config.rag import QdrantStore, VectorStoreBase
from ragflow_config.rag._stores._pointer import Pointer

pytest.importorskip("mcp", reason="the serve extra is not installed (pip install -e .[serve])")

import uvicorn
from server._serving import TOKEN, ServerProcess

from ragflow_config.server import ServeOptions, create_app
from ragflow_config.server._transport import bounded_protocol

FILES = 30
CLIENTS = 6
# Every client here has the one loopback address: one client to admission control,
# whose share (4 in flight) is not what these tests are about.
ONE_ADDRESS = ("--max-searches-per-client", str(CLIENTS))
TOP_K = 5
SETS_PER_PHASE = 40  # result sets each phase waits for (before the run, after it, new server)
PHASE_DEADLINE = 120.0  # seconds a phase may wait for them before the test gives up
QUERIES = [" ".join(WORDS[(i * 7 + j * 5) % len(WORDS)] for j in range(3)) for i in range(16)]
HASHING = "{type: hashing, parameters: {dimensions: 384}}"
MINILM = "{type: minilm}"
ENGINES = ["qdrant", "milvus_lite", "pgvector"]


# -- engines ------------------------------------------------------------------------


class SharedQdrantStore(QdrantStore):
    """Qdrant local, opened once per path in this process and shared by every pipeline
    built meanwhile: the one way a server and a run can both use a local folder."""

    opened: ClassVar[dict[str, tuple[QdrantStore, int]]] = {}

    async def __aenter__(self) -> SharedQdrantStore:
        key = self.parameters.model_dump_json()
        if key in self.opened:
            store, users = self.opened[key]
            self.opened[key] = (store, users + 1)
            assert isinstance(store, SharedQdrantStore)
            return store
        await super().__aenter__()
        self.opened[key] = (self, 1)
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        key = self.parameters.model_dump_json()
        store, users = self.opened[key]
        if users > 1:
            self.opened[key] = (store, users - 1)
            return
        del self.opened[key]
        await QdrantStore.__aexit__(store, *exc_info)


def shared_qdrant_registry() -> Registry:
    """Every installed type, with `qdrant` opening :class:`SharedQdrantStore`."""
    installed = Registry.from_entry_points()
    registry = Registry()
    for kind in KINDS:
        for found in installed.types(kind):
            component = found.cls
            if (kind, found.name) == ("vector_store", "qdrant"):
                component = SharedQdrantStore
            registry.register(kind, found.name, component, distribution=found.distribution)
    return registry


@dataclass
class Engine:
    name: str
    store: str  # the pipeline file's vector_stores entry
    store_class: type[VectorStoreBase]
    registry: Registry
    in_process: bool
    env: dict[str, str] = field(default_factory=dict)

    @contextlib.asynccontextmanager
    async def server(self, file: Path) -> AsyncIterator[str]:
        """Serve ``file`` over HTTP; yield the base URL."""
        if self.in_process:
            async with in_process_server(Pipeline.load(file, self.registry)) as url:
                yield url
            return
        env = {**self.env, "RAGFLOW_SERVE_TOKEN": TOKEN}
        process = await asyncio.to_thread(
            ServerProcess, str(file), "--no-access-log", *ONE_ADDRESS, env=env
        )
        try:
            yield process.url
        finally:
            code = await asyncio.to_thread(process.stop)
            process.__exit__(None, None, None)
            assert code == 0, process.log


@pytest.fixture(params=ENGINES)
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Engine:
    kind = request.param
    if kind == "qdrant":
        return Engine(
            kind,
            "{type: qdrant, parameters: {path: store}}",
            QdrantStore,
            shared_qdrant_registry(),
            in_process=True,
        )
    if kind == "milvus_lite":
        pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (extra: milvus)")
        from ragflow_config.rag import MilvusLiteStore

        return Engine(
            kind,
            "{type: milvus_lite, parameters: {uri: milvus.db}}",
            MilvusLiteStore,
            Registry.from_entry_points(),
            in_process=True,
        )
    pytest.importorskip("psycopg", reason="psycopg is not installed (extra: pgvector)")
    from ragflow_config.rag import PgVectorStore

    dsn = request.getfixturevalue("pgvector_dsn")
    monkeypatch.setenv("PGVECTOR_DSN", dsn)  # the run's, in this process
    return Engine(
        kind,
        "{type: pgvector, parameters: {dsn_env: PGVECTOR_DSN}}",
        PgVectorStore,
        Registry.from_entry_points(),
        in_process=False,
        env={"PGVECTOR_DSN": dsn},
    )


@contextlib.asynccontextmanager
async def in_process_server(pipeline: Pipeline) -> AsyncIterator[str]:
    """The HTTP app of `serve` under uvicorn, in this event loop, on a free loopback port."""
    options = ServeOptions(token=SecretStr(TOKEN), max_searches_per_client=CLIENTS)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    config = uvicorn.Config(
        create_app(pipeline, options),
        http=bounded_protocol(options.transport_limits()),
        log_level="warning",
        access_log=False,
        lifespan="on",
    )
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        while not server.started:
            if task.done():
                task.result()
                raise AssertionError("the server stopped before it started")
            await asyncio.sleep(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
        sock.close()


# -- the load -----------------------------------------------------------------------


@dataclass
class ResultSet:
    """One search: which server answered, when (monotonic seconds), and what."""

    server: str
    client: int
    started: float
    ended: float
    status: int | None = None
    error: str | None = None
    revisions: list[str] = field(default_factory=list)
    generation: str = ""  # old, new, mixed, unknown or empty; set by classify()

    @property
    def failed(self) -> bool:
        return self.error is not None or self.status != 200


class Load:
    """``CLIENTS`` clients searching one server in a loop until stopped."""

    def __init__(self, url: str, label: str, results: list[ResultSet]) -> None:
        self.url, self.label, self.results = url, label, results
        self._stop = asyncio.Event()
        self._tasks = [asyncio.create_task(self._client(n)) for n in range(CLIENTS)]

    async def _client(self, number: int) -> None:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx.AsyncClient(base_url=self.url, headers=headers, timeout=60) as client:
            turn = number
            while not self._stop.is_set():
                query = QUERIES[turn % len(QUERIES)]
                turn += CLIENTS
                started = time.monotonic()
                result = ResultSet(self.label, number, started, started)
                try:
                    answer = await client.post(
                        "/v1/knowledge-bases/docs/search", json={"query": query, "top_k": TOP_K}
                    )
                    result.status = answer.status_code
                    if answer.status_code == 200:
                        result.revisions = [
                            hit["chunk"]["metadata"]["ragflow"]["revision"]
                            for hit in answer.json()["hits"]
                        ]
                    else:
                        result.error = answer.text[:300]
                except Exception as exc:  # every failure is counted, none ends the load
                    result.error = f"{type(exc).__name__}: {exc}"
                result.ended = time.monotonic()
                self.results.append(result)
                await asyncio.sleep(0.01)

    def started_after(self, moment: float) -> int:
        return sum(1 for r in self.results if r.server == self.label and r.started > moment)

    async def until(self, count: int, after: float = 0.0) -> None:
        """Wait until ``count`` searches that started after ``after`` have answered."""
        deadline = time.monotonic() + PHASE_DEADLINE
        while self.started_after(after) < count:
            for task in self._tasks:
                if task.done():
                    task.result()
            assert time.monotonic() < deadline, f"{self.label}: the load made no progress"
            await asyncio.sleep(0.02)

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._tasks)


# -- the scenario -------------------------------------------------------------------


def write_pipelines(
    folder: Path, engine: Engine, old: tuple[str, int], new: tuple[str, int]
) -> tuple[Path, Path]:
    """Two pipeline files of one knowledge base, ``(embedding, chunk_size)`` each, over a
    corpus of ``FILES`` Markdown files; the collection's name is new (the Postgres server
    serves every test of the session)."""
    write_corpus(folder / "corpus", FILES)
    collection = f"docs_{uuid.uuid4().hex[:8]}"
    return (
        write_pipeline(folder / "old.yaml", engine, *old, collection),
        write_pipeline(folder / "new.yaml", engine, *new, collection),
    )


def write_pipeline(
    file: Path, engine: Engine, embedding: str, chunk_size: int, collection: str
) -> Path:
    file.write_text(
        textwrap.dedent(f"""\
        version: 1
        vector_stores:
          store: {engine.store}
        embeddings:
          model: {embedding}
        knowledge_bases:
          - name: docs
            sources: [{{path: corpus}}]
            chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 8}}}}
            embedding: model
            vector_store: store
            collection: {collection}
        """),
        encoding="utf-8",
    )
    return file


@dataclass
class Switch:
    """The pointer writes of the run, timed: (started, done, live collection)."""

    writes: list[tuple[float, float, str]] = field(default_factory=list)

    def to(self, collection: str) -> tuple[float, float]:
        found = [(s, d) for s, d, live in self.writes if live == collection]
        assert found, f"no pointer write made {collection} live: {self.writes}"
        return found[0]


@pytest.fixture
def switch(engine: Engine, monkeypatch: pytest.MonkeyPatch) -> Switch:
    """Times every pointer write made in this process (the run's; servers only read)."""
    recorded = Switch()
    original = engine.store_class.write_pointer

    async def timed(self: VectorStoreBase, name: str, pointer: Pointer) -> None:
        started = time.monotonic()
        await original(self, name, pointer)
        recorded.writes.append((started, time.monotonic(), pointer.live.collection))

    monkeypatch.setattr(engine.store_class, "write_pointer", timed)
    return recorded


async def revisions(file: Path, engine: Engine) -> set[str]:
    """The revisions of the documents ``file``'s handle reads: one per file, its generation's."""
    async with Pipeline.load(file, engine.registry).build() as built:
        kb = built.knowledge_bases["docs"]
        collection = await kb.live_collection()
        documents = await kb.vector_store.list_documents(collection, None)
    found = {d.metadata["ragflow"]["revision"] for d in documents}
    assert len(documents) == len(found) == FILES, collection
    return found


async def assert_switched(file: Path, engine: Engine, report: KnowledgeBaseReport) -> None:
    """The run rebuilt beside and switched; the pointer keeps the old collection next."""
    assert report.rebuild is not None and report.rebuild.switched, report.rebuild
    async with Pipeline.load(file, engine.registry).build() as built:
        pointer = await built.knowledge_bases["docs"].read_pointer()
    assert pointer is not None and pointer.building is None
    assert [g.collection for g in pointer.generations] == [
        report.rebuild.target,
        report.rebuild.live,
    ]


def classify(results: list[ResultSet], generations: dict[str, set[str]]) -> None:
    for result in results:
        if result.failed:
            continue
        labels = {
            next((label for label, revs in generations.items() if rev in revs), "unknown")
            for rev in result.revisions
        }
        if not labels:
            result.generation = "empty"
        elif len(labels) > 1:
            result.generation = "mixed"
        else:
            result.generation = labels.pop()


def summary(engine: Engine, change: str, results: list[ResultSet], moments: list[float]) -> str:
    """Result sets by server and generation, and by phase: before the run, during it
    (until the switch), across the switch, after it."""
    counts: dict[str, int] = {}
    phases = {"before run": 0, "during run": 0, "across switch": 0, "after switch": 0}
    for result in results:
        key = f"{result.server}:{'failed' if result.failed else result.generation}"
        counts[key] = counts.get(key, 0) + 1
    if len(moments) < 3:  # no switch was found
        return f"{engine.name} {change}: {len(results)} result sets {dict(sorted(counts.items()))}"
    began, switch_started, switch_done = moments
    for result in results:
        if result.ended < began:
            phases["before run"] += 1
        elif result.ended < switch_started:
            phases["during run"] += 1
        elif result.started < switch_done:
            phases["across switch"] += 1
        else:
            phases["after switch"] += 1
    return (
        f"{engine.name} {change}: {len(results)} result sets "
        f"{dict(sorted(counts.items()))} {phases}"
    )


def assert_whole_and_answered(results: list[ResultSet]) -> None:
    failed = [r for r in results if r.failed]
    assert not failed, f"{len(failed)} failed searches, e.g. {failed[:3]}"
    odd = [r for r in results if r.generation != "old" and r.generation != "new"]
    assert not odd, f"{len(odd)} result sets not from one generation, e.g. {odd[:3]}"


@contextlib.contextmanager
def reported(
    engine: Engine, change: str, results: list[ResultSet], moments: list[float]
) -> Iterator[None]:
    try:
        yield
    finally:
        print(summary(engine, change, results, moments))


@dataclass
class Rebuilt:
    """A rebuild run under load: every result set, classified, and the run's report."""

    results: list[ResultSet]
    report: KnowledgeBaseReport
    began: float  # when the run began
    switch_started: float  # when the pointer write that made the new collection live began
    switch_done: float  # and when it was done


RebuildUnderLoad = Callable[..., Awaitable[Rebuilt]]


@pytest.fixture
def rebuild_under_load(tmp_path: Path, engine: Engine, switch: Switch) -> RebuildUnderLoad:
    """Builds the old file, serves it under load, runs the new file, checks that it rebuilt
    beside and switched and that every search answered from one generation; then gives
    what was seen, for each test's own claims. ``serve_new``: after the run, a server on
    the new file takes a load too (the deploy of the new file)."""

    async def rebuild(
        change: str, old: tuple[str, int], new: tuple[str, int], *, serve_new: bool = False
    ) -> Rebuilt:
        old_file, new_file = write_pipelines(tmp_path, engine, old, new)
        options = RunOptions(workers=0)
        first = await Pipeline.load(old_file, engine.registry).run(options=options)
        [built] = first.knowledge_bases
        assert built.rebuild is None and built.count("add") == FILES
        old_revisions = await revisions(old_file, engine)

        results: list[ResultSet] = []
        moments: list[float] = []  # the run began, the switch started, was done
        with reported(engine, change, results, moments):
            async with engine.server(old_file) as old_url:
                load = Load(old_url, "old-file server", results)
                try:
                    await load.until(SETS_PER_PHASE)
                    moments.append(time.monotonic())
                    run = await Pipeline.load(new_file, engine.registry).run(options=options)
                    returned = time.monotonic()
                    await load.until(SETS_PER_PHASE, after=returned)
                    if serve_new:
                        async with engine.server(new_file) as new_url:
                            new_load = Load(new_url, "new-file server", results)
                            try:
                                await new_load.until(SETS_PER_PHASE)
                            finally:
                                await new_load.stop()
                finally:
                    await load.stop()

            new_revisions = await revisions(new_file, engine)
            assert not old_revisions & new_revisions
            classify(results, {"old": old_revisions, "new": new_revisions})
            assert_whole_and_answered(results)

            report = run.knowledge_bases[0]
            assert not run.failed
            await assert_switched(new_file, engine, report)
            assert report.rebuild is not None
            moments += switch.to(report.rebuild.target)
        return Rebuilt(results, report, *moments)

    return rebuild


async def test_a_model_change_switches_under_load(rebuild_under_load: RebuildUnderLoad) -> None:
    """hashing (384) -> minilm (384): the server on the old file keeps its generation."""
    seen = await rebuild_under_load("model change", (HASHING, 64), (MINILM, 64), serve_new=True)
    results, switch_started, switch_done = seen.results, seen.switch_started, seen.switch_done
    assert seen.report.rebuild is not None
    assert seen.report.rebuild.changed == ["embedding"]  # 384 both: no dimension check saves it
    served_old = [r for r in results if r.server == "old-file server"]
    served_new = [r for r in results if r.server == "new-file server"]
    assert sum(r.ended < switch_started for r in served_old) >= SETS_PER_PHASE
    assert any(seen.began < r.ended < switch_started for r in served_old)  # during the run
    assert sum(r.started > switch_done for r in served_old) >= SETS_PER_PHASE
    assert len(served_new) >= SETS_PER_PHASE
    # Before the switch nothing answers from the new generation; the server on the
    # old file goes on answering from the old one after it; the new file's, from the new.
    assert {r.generation for r in results if r.ended < switch_started} == {"old"}
    assert {r.generation for r in served_old} == {"old"}
    assert {r.generation for r in served_new} == {"new"}


async def test_a_chunker_change_is_followed_at_the_switch_under_load(
    rebuild_under_load: RebuildUnderLoad,
) -> None:
    """Same model, another chunk size: the running server follows the pointer, once."""
    seen = await rebuild_under_load("chunker change", (HASHING, 64), (HASHING, 48))
    results, switch_started, switch_done = seen.results, seen.switch_started, seen.switch_done
    assert seen.report.rebuild is not None and seen.report.rebuild.changed == ["chunker"]
    assert sum(r.ended < switch_started for r in results) >= SETS_PER_PHASE
    # Whether a search also ends while the run writes depends on the scheduler (a fast
    # run on a quiet host may finish between two searches): not asserted, as a time is not.
    assert sum(r.started > switch_done for r in results) >= SETS_PER_PHASE
    # The new generation answers only once the pointer write began; the old one only
    # to searches that started before it was done (they may have read it just before).
    early = [r for r in results if r.generation == "new" and r.ended <= switch_started]
    assert not early, f"new results before the switch: {early[:3]}"
    late = [r for r in results if r.generation == "old" and r.started >= switch_done]
    assert not late, f"old results after the switch: {late[:3]}"
    # Each client goes from the old generation to the new one once, never back.
    for client in range(CLIENTS):
        seen_by = [
            r.generation for r in sorted(results, key=lambda r: r.started) if r.client == client
        ]
        flips = sum(1 for a, b in itertools.pairwise(seen_by) if a != b)
        assert flips == 1 and seen_by[0] == "old" and seen_by[-1] == "new", (client, seen_by)
