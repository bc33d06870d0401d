"""The runner end to end: a tiny corpus, the hashing model and Qdrant on local disk."""

from __future__ import annotations

import asyncio
import gc
import hashlib
import json
import multiprocessing
import os
import pickle
import shutil
import signal
import time
from pathlib import Path
from typing import ClassVar

import pytest

from ragflow_config import ParserError, VectorStoreError
from ragflow_config._errors import UnstorableDocumentError
from ragflow_config.cli import main
from ragflow_config.executors.local import ParserProcesses, _prepare_many
from ragflow_config.pipeline import Change, Pipeline, Registry, RunOptions, RunReport
from ragflow_config.pipeline._run import _Ahead
from ragflow_config.rag import (
    ApproxTokenChunker,
    DocumentSummary,
    QdrantStore,
    Section,
    TextParser,
    VectorRecord,
)
from ragflow_config.sources import document_id

from .conftest import FILES

GOOD = {
    "fox.md": "# Foxes\n\nThe quick brown fox jumps over the lazy dog.\n",
    "guide/sorting.txt": "Sort a list of dictionaries with sorted() and a key function.\n",
    "guide/deep/files.rst": "Files\n=====\n\nOpen a file with open() and read it line by line.\n",
}
UNSUPPORTED = "logo.bin"
BROKEN = "broken.txt"  # latin-1 bytes: the text parser (utf-8, strict) refuses them


def make_project(folder: Path, *, broken: bool = True) -> Path:
    """A pipeline file and its corpus; return the pipeline file."""
    shutil.copy(FILES / "run" / "pipeline.yaml", folder / "pipeline.yaml")
    docs = folder / "docs"
    for relative, text in GOOD.items():
        (docs / relative).parent.mkdir(parents=True, exist_ok=True)
        (docs / relative).write_text(text, encoding="utf-8")
    (docs / UNSUPPORTED).write_bytes(bytes(range(256)))
    (docs / ".hidden.txt").write_text("never indexed", encoding="utf-8")
    if broken:
        (docs / BROKEN).write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    return folder / "pipeline.yaml"


def edit(path: Path, old: str, new: str) -> None:
    """Replace ``old`` in a test's pipeline file, which must still hold it."""
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path.name} no longer holds {old!r}"
    path.write_text(text.replace(old, new), encoding="utf-8")


async def documents(pipeline: Pipeline) -> dict[str, DocumentSummary]:
    async with pipeline.build() as built:
        listed = await built.knowledge_base("docs").list_documents()
    return {summary.source: summary for summary in listed}


async def started(processes: ParserProcesses) -> bool:
    """Wait for the start a ``prepare`` began: whether the processes now take the files."""
    assert processes._started is not None, "nothing asked the processes to start"
    return await processes._started


def actions(report: RunReport) -> dict[str, str]:
    [kb] = report.knowledge_bases
    return {change.path: change.action for change in kb.changes}


async def test_a_run_in_process_indexes_skips_and_reports(tmp_path: Path) -> None:
    pipeline = Pipeline.load(make_project(tmp_path))
    before = time.perf_counter()
    report = await pipeline.run(options=RunOptions(workers=0))
    # The run's own duration, within the call's (a consistency check, not a speed bound).
    assert 0 < report.seconds <= time.perf_counter() - before

    assert actions(report) == {
        **dict.fromkeys(GOOD, "add"),
        UNSUPPORTED: "unsupported",
        BROKEN: "failed",
    }
    [kb] = report.knowledge_bases
    reasons = {change.path: change.reason for change in kb.changes}
    assert reasons[UNSUPPORTED] == (
        "unknown file type: binary content, and no parser claims its extension"
    )
    assert reasons[BROKEN].startswith("not valid utf-8 at byte 3")
    assert report.failed and kb.aborted is None

    stored = await documents(pipeline)
    assert sorted(stored) == sorted(GOOD)
    for relative, summary in stored.items():
        state = summary.metadata["ragflow"]
        assert state["path"] == relative  # relative to the source folder, POSIX separators
        assert state["source"] == "docs"
        data = (tmp_path / "docs" / relative).read_bytes()
        assert state["content_hash"] == hashlib.sha256(data).hexdigest()
        assert state["chunks"] == summary.chunk_count >= 1
    assert (tmp_path / "store").is_dir()  # `path: store` is relative to the pipeline file

    again = await pipeline.run(options=RunOptions(workers=0))
    assert actions(again) == {
        **dict.fromkeys(GOOD, "unchanged"),
        UNSUPPORTED: "unsupported",
        BROKEN: "failed",
    }


async def test_the_default_process_pool_indexes_the_same(tmp_path: Path) -> None:
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))
    report = await pipeline.run()  # default: parser processes
    assert actions(report) == {**dict.fromkeys(GOOD, "add"), UNSUPPORTED: "unsupported"}
    assert not report.failed
    stored = await documents(pipeline)
    assert sorted(stored) == sorted(GOOD)


async def test_parser_processes_take_over_once_started_and_embed_there(tmp_path: Path) -> None:
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))
    data = (tmp_path / "docs" / "fox.md").read_bytes()
    async with pipeline.build() as built:
        plan = built.indexing["docs"]
        parser, chunker, model = plan.parsers[0], plan.chunker, plan.knowledge_base.embedding_model
        assert model.cpu_bound
        processes = ParserProcesses(1, [plan])
        try:
            # While the processes start, this one does their work.
            here, made_here = await processes.prepare(parser, chunker, model, data, "fox.md")
            assert not processes.started
            assert await started(processes)
            chunks, made = await processes.prepare(parser, chunker, model, data, "fox.md")
            assert made is not None and made_here is not None
            vectors, vectors_here = made.embeddings, made_here.embeddings
            # Files queued while the process works travel several to a task; a
            # parser's error reaches its own caller only, as itself.
            files = [(b"caf\xe9", "broken.txt") if i == 7 else (data, "fox.md") for i in range(20)]
            outcomes = await asyncio.gather(
                *(processes.prepare(parser, chunker, model, d, name) for d, name in files),
                return_exceptions=True,
            )
            for i, outcome in enumerate(outcomes):
                if i == 7:
                    assert isinstance(outcome, ParserError) and "not valid utf-8" in str(outcome)
                else:
                    assert not isinstance(outcome, BaseException) and outcome[1] is not None
                    assert outcome[1].embeddings == vectors
        finally:
            processes.shutdown()
    assert [c.content.text for c in chunks] == [c.content.text for c in here]
    assert vectors == vectors_here == (await model([c.content for c in here])).embeddings


async def test_parser_processes_start_only_for_more_parsing_than_their_start_costs(
    tmp_path: Path,
) -> None:
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))
    data = (tmp_path / "docs" / "fox.md").read_bytes()
    before = set(multiprocessing.active_children())
    async with pipeline.build() as built:
        plan = built.indexing["docs"]
        parser, chunker, model = plan.parsers[0], plan.chunker, plan.knowledge_base.embedding_model
        processes = ParserProcesses(1, [plan])
        try:
            for _ in range(5):  # a few small files ahead: done here, in a few milliseconds
                await processes.prepare(parser, chunker, model, data, "f.md", backlog=3)
            # Never asked to start, so no process can appear later either.
            assert processes._started is None
            assert set(multiprocessing.active_children()) == before
            await processes.prepare(parser, chunker, model, data, "f.md", backlog=10**6)
            assert await started(processes)
        finally:
            processes.shutdown()


async def test_a_small_run_never_starts_parser_processes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Observed where the start begins: a run this small ends before any
    # process would have appeared, and its end would wait for them.
    starts: list[int] = []
    start = ParserProcesses._start_in_background

    def counted(self: ParserProcesses) -> None:
        starts.append(1)
        start(self)

    monkeypatch.setattr(ParserProcesses, "_start_in_background", counted)
    report = await Pipeline.load(make_project(tmp_path, broken=False)).run(
        options=RunOptions(workers=2)
    )
    assert set(actions(report).values()) == {"add", "unsupported"}
    assert starts == []


def test_the_files_ahead_follow_the_recent_share_of_changed_files() -> None:
    ahead = _Ahead(total=2000)
    ahead.reached = 64
    assert ahead.files() == 1936  # nothing decided yet: every file may need writing
    for _ in range(1000):  # an unchanged stretch
        ahead.decided(False)
    ahead.reached = 1064
    assert ahead.files() == 0
    for _ in range(64):  # then a new folder: the estimate follows at once
        ahead.decided(True)
    ahead.reached = 1128
    assert ahead.files() == 872
    for _ in range(16):
        ahead.decided(False)
    assert ahead.files() == 872 * 48 // 64


def many_files(folder: Path, count: int) -> Path:
    """``count`` files of ~20 KB each, distinct words, a pipeline of 512-token chunks over them."""
    path = make_project(folder, broken=False)
    path.write_text(
        path.read_text().replace("chunk_size: 32, overlap: 4", "chunk_size: 512, overlap: 0")
    )
    words = [f"w{n}" for n in range(5000)]
    many = folder / "docs" / "many"
    many.mkdir()
    for i in range(count):
        text = " ".join(words[(i * 7 + j * 13) % len(words)] for j in range(3000))
        (many / f"{i:04}.txt").write_text(text + "\n", encoding="utf-8")
    return path


async def test_a_run_whose_files_go_through_the_processes_stores_what_one_in_process_stores(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    settled: list[int] = []
    settle = ParserProcesses._settle

    def counted(self: ParserProcesses, *args: object) -> None:
        settled.append(1)
        settle(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(ParserProcesses, "_settle", counted)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    in_process = Pipeline.load(many_files(tmp_path / "a", 400))
    await in_process.run(options=RunOptions(workers=0))
    pooled = Pipeline.load(many_files(tmp_path / "b", 400))
    report = await pooled.run(options=RunOptions(workers=2))
    assert not report.failed and report.knowledge_bases[0].count("add") == 403
    assert settled, "no file went through the processes: the test proves nothing"

    async def points(pipeline: Pipeline) -> dict[tuple[str, int], list[float]]:
        async with pipeline.build() as built:
            kb = built.knowledge_base("docs")
            hits = await kb.search(["fox", "w17 w30 w43", "read a file line by line"], top_k=500)
        return {(hit.chunk.source, hit.chunk.chunk_index): round(hit.score, 9) for hit in hits}

    assert await points(pooled) == await points(in_process)


async def test_a_parse_failure_fails_only_that_file(tmp_path: Path) -> None:
    pipeline = Pipeline.load(make_project(tmp_path))
    report = await pipeline.run(options=RunOptions(workers=1))
    assert actions(report) == {
        **dict.fromkeys(GOOD, "add"),
        UNSUPPORTED: "unsupported",
        BROKEN: "failed",
    }


async def test_a_file_gone_since_it_was_listed_fails_alone_and_keeps_its_stored_version(
    tmp_path: Path,
) -> None:
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))
    docs = tmp_path / "docs"
    for i in range(8):
        (docs / f"note{i}.txt").write_text(f"note number {i}\n", encoding="utf-8")
    await pipeline.run(options=RunOptions(workers=0))
    before = await documents(pipeline)
    for path in docs.rglob("*.*"):
        path.write_text(path.read_text(errors="replace") + "edited\n", encoding="utf-8")

    reported: set[str] = set()

    def delete_the_rest(kb: str, change: Change) -> None:
        # The first report deletes every file not yet reported, as a checkout
        # that changes under a run would; some are in flight already.
        if not reported:
            for path in docs.rglob("*.txt"):
                if path.relative_to(docs).as_posix() != change.path:
                    path.unlink()
        reported.add(change.path)

    report = await pipeline.run(options=RunOptions(workers=0, progress=delete_the_rest))

    [kb] = report.knowledge_bases
    failed = {c.path: c.reason for c in kb.changes if c.action == "unreadable"}
    assert failed, "the deletions came too late to test anything"
    assert report.failed
    assert set(failed.values()) == {"cannot read the file: No such file or directory"}
    assert kb.aborted is None and len(kb.changes) == len(before) + 1  # + logo.bin
    after = await documents(pipeline)
    assert set(after) == set(before)
    for path in failed:
        assert after[path].metadata == before[path].metadata  # the old version, untouched
    # Each row names the stored document it leaves alone (what `run --json` prints).
    ids = {c.path: c.document_id for c in kb.changes if c.action == "unreadable"}
    assert ids == {path: after[path].document_id for path in failed}


async def test_on_error_fail_stops_at_the_first_failure(tmp_path: Path) -> None:
    path = make_project(tmp_path)
    path.write_text(path.read_text().replace("on_error: skip", "on_error: fail"))
    many = {f"note{i}.txt": f"note number {i}\n" for i in range(8)}
    for name, text in many.items():
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    pipeline = Pipeline.load(path)

    report = await pipeline.run(options=RunOptions(workers=0))

    [kb] = report.knowledge_bases
    assert kb.aborted is not None and kb.aborted.startswith(f"{BROKEN}: not valid utf-8")
    assert report.failed
    assert kb.count("failed") == 1
    total = len(GOOD) + len(many) + 1
    assert len(kb.changes) < total  # files after the failure were never processed
    # The files in flight were cancelled and waited for: nothing of the run goes on after it.
    assert asyncio.all_tasks() == {asyncio.current_task()}
    assert len(await documents(pipeline)) < len(GOOD) + len(many)


class DiskFillingQdrant(QdrantStore):
    """Local Qdrant whose disk is full from the fourth write on."""

    writes: ClassVar[int] = 0

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        DiskFillingQdrant.writes += 1
        if DiskFillingQdrant.writes >= 4:
            raise VectorStoreError("disk-filling qdrant", "the disk is full")
        await super().insert(collection, records)


async def test_a_store_failure_ends_the_run_with_its_error_and_nothing_left_running(
    tmp_path: Path,
) -> None:
    path = make_project(tmp_path, broken=False)
    edit(path, "type: qdrant", "type: disk_filling_qdrant")
    for i in range(12):
        (tmp_path / "docs" / f"note{i}.txt").write_text(f"note number {i}\n", encoding="utf-8")
    registry = Registry.from_entry_points()
    registry.register("vector_store", "disk_filling_qdrant", DiskFillingQdrant)
    DiskFillingQdrant.writes = 0

    with pytest.raises(VectorStoreError, match="the disk is full"):
        await Pipeline.load(path, registry).run(options=RunOptions(workers=0))
    # The other files in flight were cancelled and waited for, not left to write later.
    assert asyncio.all_tasks() == {asyncio.current_task()}


class PickyQdrant(QdrantStore):
    """Local Qdrant that cannot hold the text of ``fox.md``, as PostgreSQL cannot hold a NUL."""

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        if any(record.chunk.source == "fox.md" for record in records):
            raise UnstorableDocumentError("picky qdrant", "fox.md: a character it cannot store")
        await super().insert(collection, records)


async def test_a_document_the_store_cannot_hold_fails_alone(tmp_path: Path) -> None:
    path = make_project(tmp_path, broken=False)
    edit(path, "type: qdrant", "type: picky_qdrant")
    registry = Registry.from_entry_points()
    registry.register("vector_store", "picky_qdrant", PickyQdrant)

    [kb] = (await Pipeline.load(path, registry).run(options=RunOptions(workers=0))).knowledge_bases

    [failed] = [c for c in kb.changes if c.failed]
    assert (failed.action, failed.path, failed.document_id, failed.reason) == (
        "failed",
        "fox.md",
        document_id("docs", "docs", "fox.md"),
        "fox.md: a character it cannot store",
    )
    assert kb.count("add") == len(GOOD) - 1


def test_the_cli_runs_searches_and_reports_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(make_project(tmp_path))

    # One file failed, skipped under `on_error: skip`: reported, and no failure of the run.
    assert main(["run", "--workers", "0", "--json", path]) == 0
    report = json.loads(capsys.readouterr().out)
    assert set(report) == {"dry_run", "seconds", "failed", "knowledge_bases"}
    assert (report["dry_run"], report["failed"]) == (False, True)
    [kb] = report["knowledge_bases"]
    assert set(kb) == {
        "name",
        "counts",
        "chunks_written",
        "remembered",
        "chunks_truncated",
        "vectors",
        "fingerprint_changes",
        "setting_changes",
        "deletion_guard",
        "chunks_to_embed",
        "bytes_to_embed",
        "embedding_model",
        "price_per_million_tokens",
        "aborted",
        "unmatched_sources",
        "no_files",
        "live_collection",
        "rebuild",
        "changes",
    }
    assert (kb["live_collection"], kb["rebuild"]) == ("docs", None)  # a first run builds in place
    assert kb["counts"] == {
        "add": 3,
        "update": 0,
        "repair": 0,
        "delete": 0,
        "unchanged": 0,
        "keep": 0,
        "unsupported": 1,
        "empty": 0,
        "skipped": 0,
        "failed": 1,
        "unreadable": 0,
    }
    assert kb["chunks_written"] >= 3
    assert kb["aborted"] is None
    # A first run: nothing changed, nothing to delete by design (prune is off), no price given.
    assert (kb["setting_changes"], kb["deletion_guard"]) == ([], None)
    assert (kb["embedding_model"], kb["price_per_million_tokens"]) == ("hashing-v1", None)
    assert (kb["chunks_to_embed"], kb["bytes_to_embed"]) == (0, 0)  # a dry run's estimate
    failed = next(change for change in kb["changes"] if change["action"] == "failed")
    assert set(failed) == {
        "action",
        "path",
        "document_id",
        "reason",
        "chunks",
        "truncated",
        "remembered",
    }
    assert failed["path"] == BROKEN and "not valid utf-8" in failed["reason"]
    assert (failed["remembered"], kb["remembered"]) == (False, 0)

    assert main(["search", path, "docs", "quick", "brown", "fox", "--top-k", "1"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("[1] score ") and printed[0].endswith("fox.md  (chunk 0)")
    assert "The quick brown fox jumps over the lazy dog." in "\n".join(printed)

    # Still failing, nothing else to do: skipped again, and counted, not named, every run
    # (issue 52: remembered, not parsed again).
    assert main(["run", "--workers", "0", path]) == 0
    captured = capsys.readouterr()
    assert BROKEN not in captured.err + captured.out
    assert (
        "docs: did add 0, update 0, delete 0; unchanged 3, kept 0, unsupported 1, empty 0, "
        "failed 1 (1 skipped, on_error: skip);" in captured.out
    )
    assert "docs: 2 files yielded nothing when last tried" in captured.out
    assert main(["run", "--workers", "0", path, "--strict"]) == 1
    assert f"docs: skipped {BROKEN}: not valid utf-8 at byte 3" in capsys.readouterr().err


async def test_a_named_store_and_model_are_built_once_and_shared(tmp_path: Path) -> None:
    shutil.copy(FILES / "run" / "shared_store.yaml", tmp_path / "pipeline.yaml")
    pipeline = Pipeline.load(tmp_path / "pipeline.yaml")
    async with pipeline.build() as built:
        guides, faq, inline = (built.knowledge_base(n) for n in ("guides", "faq", "inline"))
        assert guides.vector_store is faq.vector_store
        assert guides.embedding_model is faq.embedding_model
        assert inline.vector_store is not guides.vector_store
        assert inline.embedding_model is not guides.embedding_model


async def test_a_run_keeps_older_objects_from_the_collector_only_while_it_runs(
    tmp_path: Path,
) -> None:
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))
    frozen_during: list[int] = []
    options = RunOptions(
        workers=0, progress=lambda kb, change: frozen_during.append(gc.get_freeze_count())
    )
    gc.unfreeze()  # what the process running the tests froze (mutmut's fork server does) is not ours
    await pipeline.run(options=options)
    assert frozen_during and min(frozen_during) > 0
    assert gc.get_freeze_count() == 0

    # A caller that froze objects itself finds them still frozen afterwards.
    gc.freeze()
    try:
        await pipeline.run(options=options)
        assert gc.get_freeze_count() > 0
    finally:
        gc.unfreeze()


def test_an_error_that_cannot_travel_back_from_a_process_is_reported_by_name() -> None:
    class Unpicklable(Exception):
        def __init__(self) -> None:
            super().__init__("a parser bug")
            self.callback = lambda: None

    class BuggyParser(TextParser):
        async def parse(self, file: bytes | str, filename: str) -> list[Section]:
            raise Unpicklable()

    chunker = ApproxTokenChunker()
    outcomes = _prepare_many(
        [
            (BuggyParser(), chunker, None, b"x", "a.txt"),
            (TextParser(), chunker, None, b"fine", "b.txt"),
        ],
        parse_timeout=60,
    )
    (failed, error, _), (ok, prepared, _) = outcomes  # each with the records it logged
    assert (
        not failed and isinstance(error, RuntimeError) and str(error) == "Unpicklable: a parser bug"
    )
    pickle.dumps(outcomes)  # the whole task's result can travel
    assert ok and [c.content.text for c in prepared[0]] == ["fine"]


class BuggyTextParser(TextParser):
    """A plugin parser with a bug of its own on ``bug.txt``: not a ParserError."""

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        if filename == "bug.txt":
            raise KeyError("page")
        return await super().parse(file, filename)


async def test_a_parser_s_own_bug_fails_its_file_alone_in_process_too(tmp_path: Path) -> None:
    path = make_project(tmp_path, broken=False)
    edit(path, "    chunker:", "    parsers: [{type: buggy}]\n    chunker:")
    (tmp_path / "docs" / "bug.txt").write_text("a file the parser trips on\n", encoding="utf-8")
    registry = Registry.from_entry_points()
    registry.register("parser", "buggy", BuggyTextParser)

    report = await Pipeline.load(path, registry).run(options=RunOptions(workers=0))

    [kb] = report.knowledge_bases
    [failed] = [c for c in kb.changes if c.failed]
    assert (failed.action, failed.path, failed.document_id, failed.reason) == (
        "failed",
        "bug.txt",
        document_id("docs", "docs", "bug.txt"),
        "KeyError: 'page'",
    )
    assert {c.path: c.action for c in kb.changes if c.path in GOOD} == dict.fromkeys(GOOD, "add")


class CrashingTextParser(TextParser):
    """Kills the parser process on ``crash.txt``, as a segfaulting C library would."""

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        if filename == "crash.txt" and multiprocessing.parent_process() is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().parse(file, filename)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs POSIX signals")
async def test_a_file_that_kills_its_parser_process_fails_alone_and_the_run_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))
    async with pipeline.build() as built:
        plan = built.indexing["docs"]
        chunker, model = plan.chunker, plan.knowledge_base.embedding_model
        parser = CrashingTextParser()
        processes = ParserProcesses(2, [plan])
        try:
            await processes.prepare(parser, chunker, model, b"warm", "a.txt")
            assert await started(processes)
            names = [f"file-{i}.txt" for i in range(24)]
            names[9] = "crash.txt"
            outcomes = await asyncio.gather(
                *(
                    processes.prepare(parser, chunker, model, f"text of {n}".encode(), n)
                    for n in names
                ),
                return_exceptions=True,
            )
            after = await processes.prepare(parser, chunker, model, b"after the crash", "later.txt")
        finally:
            processes.shutdown()
    for name, outcome in zip(names, outcomes, strict=True):
        if name == "crash.txt":
            assert isinstance(outcome, ParserError)
            assert str(outcome) == (
                "crash.txt: the parser process died while handling this file "
                "(a crash in a parsing library, or out of memory)"
            )
        else:
            assert not isinstance(outcome, BaseException), f"{name}: {outcome!r}"
            assert [c.content.text for c in outcome[0]] == [f"text of {name}"]
            assert outcome[1] is not None and len(outcome[1].embeddings) == 1
    assert after[1] is not None  # new processes took over
    assert "a parser process died; starting new ones" in caplog.text


async def test_files_sent_after_a_process_died_and_before_its_task_settled_run_again(
    tmp_path: Path,
) -> None:
    # A process dies; until the event loop settles its task, the pool is broken and
    # refuses new work at once. Files sent in that window (as another task's
    # completion sends the next ones) must go to new processes, not be lost: lost,
    # their callers would wait for ever (a run seen hanging under load).
    pipeline = Pipeline.load(make_project(tmp_path, broken=False))
    async with pipeline.build() as built:
        plan = built.indexing["docs"]
        chunker, model = plan.chunker, plan.knowledge_base.embedding_model
        processes = ParserProcesses(1, [plan])
        try:
            await processes.prepare(TextParser(), chunker, model, b"warm", "a.txt")
            assert await started(processes)
            broken = processes._executor
            [worker] = broken._processes.values()
            os.kill(worker.pid, signal.SIGKILL)
            for _ in range(500):  # the pool's own thread marks it broken
                if broken._broken:
                    break
                await asyncio.sleep(0.01)
            assert broken._broken
            prepared = await asyncio.wait_for(
                processes.prepare(TextParser(), chunker, model, b"sent meanwhile", "b.txt"), 60
            )
        finally:
            processes.shutdown()
    assert [c.content.text for c in prepared[0]] == ["sent meanwhile"]
    assert processes._executor is not broken


def test_a_report_as_json_gives_its_seconds_to_the_millisecond() -> None:
    # What `run --json` prints: a duration to read, not float noise; built here, not timed.
    report = RunReport([], seconds=12.34567, dry_run=False)
    assert report.as_dict() == {
        "dry_run": False,
        "seconds": 12.346,
        "failed": False,
        "knowledge_bases": [],
    }


async def test_a_run_stores_each_file_under_the_id_earlier_versions_gave_it(tmp_path: Path) -> None:
    # The id of knowledge base `docs`, source `docs`, file guide/sorting.txt since 1c0d2dd
    # (2026): another id would make the first run after an upgrade add every file anew
    # beside (or, with prune, in place of) the documents already stored.
    pipeline = Pipeline.load(make_project(tmp_path))
    (tmp_path / "docs" / "blank.txt").write_text("\n\n", encoding="utf-8")
    await pipeline.run(options=RunOptions(workers=0))
    stored = await documents(pipeline)
    assert stored["guide/sorting.txt"].document_id == "2cc366600917577ea030b3fa897cc533"

    # Every row names its file's document, whatever becomes of the file.
    [kb] = (await pipeline.run(options=RunOptions(workers=0))).knowledge_bases
    assert {c.path: (c.action, c.document_id) for c in kb.changes} == {
        path: (action, document_id("docs", "docs", path))
        for path, action in {
            **dict.fromkeys(GOOD, "unchanged"),
            UNSUPPORTED: "unsupported",
            BROKEN: "failed",
            "blank.txt": "empty",
        }.items()
    }


async def test_a_file_of_a_known_type_no_parser_of_the_pipeline_reads_is_unsupported(
    tmp_path: Path,
) -> None:
    path = make_project(tmp_path, broken=False)
    edit(path, "    chunker:", "    parsers: [{type: text}]\n    chunker:")
    (tmp_path / "docs" / "slides.pdf").write_bytes(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    pipeline = Pipeline.load(path)

    [kb] = (await pipeline.run(options=RunOptions(workers=0))).knowledge_bases

    [change] = [c for c in kb.changes if c.path == "slides.pdf"]
    assert (change.action, change.reason) == ("unsupported", "no parser for application/pdf")
