"""Served knowledge bases kept fresh: ``serve --refresh-every``, ``--watch`` and the refresh route.

Qdrant Edge and Qdrant's local folder admit one process, so a ``run`` cannot write
what a ``serve`` holds open. The server runs the pipeline itself instead. Each
refresh reads the pipeline file again and runs it through :meth:`Pipeline.run`,
the code ``run`` uses (its plan, writer identity, switch policy and deletion
guard), with the stores and models the server holds open (``opened``).

A change of what makes the vectors (a chunker's settings, say) builds a new
collection beside the live one and switches to it in one pointer write, so a
search reads one whole generation. A refresh that fails leaves the live
collection served and says why, in the log and in :meth:`Refresher.status`.

One refresh runs at a time. A request while one runs joins it, so the refresh
route is idempotent. A file changed while one runs (``--watch``) asks for one
more after it, since the running one may have read the file before the change.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..pipeline import Pipeline
from ..pipeline._sources import source_kind

if TYPE_CHECKING:
    from ..pipeline._build import BuiltPipeline
    from ..pipeline._run import KnowledgeBaseReport

# Its own logger, so `serve` can show what each refresh wrote (INFO) without the library's.
logger = logging.getLogger("ragflow_config.server.refresh")

# A burst of writes (an editor's save, a checkout) is one change: watchfiles waits this
# long after the last event before it reports them together.
WATCH_DEBOUNCE_MS = 500
_FAILED_FILES_SHOWN = 10


def _when(epoch: float | None) -> str | None:
    """An instant as ISO 8601 in UTC, to the second."""
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, timezone.utc).isoformat(timespec="seconds")


@dataclass(frozen=True)
class RefreshResult:
    """What one refresh did: per knowledge base, or why it failed as a whole."""

    trigger: str  # interval, watch, request (the route or the MCP tool), start
    started: float  # epoch seconds
    seconds: float
    # Each knowledge base's summary (``summary``); when the refresh failed as a whole (a
    # pipeline file that no longer loads, a store that went away), each one's is that error.
    knowledge_bases: dict[str, dict[str, Any]] = field(default_factory=dict)

    def ok(self, name: str) -> bool:
        return self.knowledge_bases.get(name, {}).get("result") == "ok"

    def as_dict(self, name: str) -> dict[str, Any]:
        kb = self.knowledge_bases.get(name, {})
        return {
            "trigger": self.trigger,
            "started_at": _when(self.started),
            "finished_at": _when(self.started + self.seconds),
            "seconds": round(self.seconds, 3),
            **kb,
        }


def summary(report: KnowledgeBaseReport) -> dict[str, Any]:
    """A knowledge base's part of a run report, as a refresh's status shows it."""
    counts = {action: n for action, n in report.as_dict()["counts"].items() if n}
    failed = [f"{c.path}: {c.reason}" for c in report.changes if c.failed]
    why = report.aborted or report.no_files or (report.rebuild and report.rebuild.blocked)
    if not why and failed:
        why = f"{len(failed)} file(s) failed; their last good version stays served"
    return {
        "result": "failed" if report.failed else "ok",
        "error": why or None,
        "counts": counts,
        "chunks_written": report.chunks,
        "live_collection": (
            report.rebuild.target
            if report.rebuild is not None and report.rebuild.switched
            else report.live_collection
        ),
        "switched": bool(report.rebuild and report.rebuild.switched),
        "failed_files": failed[:_FAILED_FILES_SHOWN],
    }


class Refresher:
    """Runs a served pipeline file again, one refresh at a time; use ``async with``.

    ``opened`` gives the server's built pipeline (waiting for its stores when they are
    not open yet): its stores and models are the ones each refresh writes with.
    ``every`` (seconds) refreshes on a period; ``watch`` refreshes when a file of a local
    source, or the pipeline file, changes. Either refreshes once at start too.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        names: list[str],
        opened: Callable[[], Awaitable[BuiltPipeline]],
        *,
        every: float | None = None,
        watch: bool = False,
    ) -> None:
        self._path = pipeline.path
        self._names = names
        self._opened = opened
        self.every = every
        self.watch = watch
        self.listeners: list[Callable[[RefreshResult], None]] = []
        self.last: RefreshResult | None = None
        self._last_ok: dict[str, float] = {}
        self.running: tuple[str, float] | None = None  # (trigger, started)
        self.next_at: float | None = None
        self._wanted: str | None = None  # the trigger of the refresh asked for next
        self._asked = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._watched = list(_watched_paths(pipeline)) if watch else []

    async def __aenter__(self) -> Refresher:
        self._asked = asyncio.Event()
        self._tasks = [asyncio.create_task(self._work(), name="ragflow-config serve: refresh")]
        if self.every is not None:
            self._tasks.append(asyncio.create_task(self._tick(self.every)))
        if self._watched:
            self._tasks.append(asyncio.create_task(self._watch()))
        if self.every is not None or self._watched:
            self.request("start")  # what changed while no server ran
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks = []

    # -- triggers ----------------------------------------------------------

    def request(self, trigger: str, *, after_running: bool = False) -> bool:
        """Ask for a refresh; False when one is already asked for, or runs (then it is
        the answer), unless ``after_running``: a change the running one may have missed."""
        if self._wanted is not None or (self.running is not None and not after_running):
            return False
        self._wanted = trigger
        self._asked.set()
        return True

    async def _tick(self, every: float) -> None:
        while True:
            self.next_at = time.time() + every
            await asyncio.sleep(every)
            self.request("interval")

    async def _watch(self) -> None:
        from watchfiles import awatch

        roots = sorted({str(root) for root, _ in self._watched})
        logger.info("watching %s for changes", ", ".join(roots))

        def relevant(_: object, path: str) -> bool:
            return any(selects(Path(path)) for _, selects in self._watched)

        async for _ in awatch(*roots, watch_filter=relevant, debounce=WATCH_DEBOUNCE_MS):
            self.request("watch", after_running=True)

    # -- the refreshes -----------------------------------------------------

    async def _work(self) -> None:
        while True:
            await self._asked.wait()
            self._asked.clear()
            trigger, self._wanted = self._wanted or "request", None
            started = time.time()
            self.running = (trigger, started)
            try:
                result = await self._refresh(trigger, started)
            finally:
                self.running = None
            self.last = result
            for name in self._names:
                if result.ok(name):
                    self._last_ok[name] = result.started + result.seconds
            for listener in self.listeners:
                listener(result)

    async def _refresh(self, trigger: str, started: float) -> RefreshResult:
        from ..pipeline._run import RunOptions

        clock = time.perf_counter()
        try:
            built = await self._opened()
            # Read again: an edited file (a chunker's settings, a new source) is taken in.
            pipeline = Pipeline.load(self._path)
            report = await pipeline.run(self._names, RunOptions(), opened=built.opened)
            stores = {id(kb.vector_store): kb.vector_store for kb in built.knowledge_bases.values()}
            for store in stores.values():  # one store may serve several knowledge bases
                await store.settle()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = " ".join(str(exc).split()) or type(exc).__name__
            logger.error("refresh failed; the live collections stay served: %s", error)
            failed = {"result": "failed", "error": error}
            return RefreshResult(
                trigger, started, time.perf_counter() - clock, dict.fromkeys(self._names, failed)
            )
        result = RefreshResult(
            trigger,
            started,
            time.perf_counter() - clock,
            {kb.name: summary(kb) for kb in report.knowledge_bases},
        )
        for name, kb in result.knowledge_bases.items():
            written = ", ".join(f"{n} {action}" for action, n in kb["counts"].items()) or "nothing"
            if kb["result"] == "ok":
                # An unchanged refresh every few seconds would drown the log: said at DEBUG.
                changed = set(kb["counts"]) - {"unchanged"} or kb["switched"]
                level = logging.INFO if changed else logging.DEBUG
                logger.log(level, "refreshed %s (%s): %s", name, trigger, written)
            else:
                logger.error("refresh of %s failed (%s): %s", name, written, kb["error"])
        return result

    def status(self, name: str) -> dict[str, Any]:
        """What ``GET /v1/knowledge-bases/{name}`` and the page show of its refreshes."""
        running = self.running
        return {
            "every_seconds": self.every,
            "watching": bool(self._watched),
            "running": (
                {"trigger": running[0], "started_at": _when(running[1])} if running else None
            ),
            "last": self.last.as_dict(name) if self.last is not None else None,
            "last_ok_at": _when(self._last_ok.get(name)),
            "next_at": _when(self.next_at),
        }


def _watched_paths(pipeline: Pipeline) -> Iterator[tuple[Path, Callable[[Path], bool]]]:
    """Each local source's folder with what it selects, and the pipeline file itself.

    Only the files a source would index count: the store's own folder, often beside
    the sources, changes with every refresh.
    """
    file = pipeline.path.resolve()
    yield file.parent, lambda path: path == file
    folder = file.parent
    for kb in pipeline.spec.knowledge_bases:
        for source in kb.sources:
            if source_kind(source).remote:
                continue  # a bucket or repository is refreshed on --refresh-every
            root = (folder / str(source.path)).resolve()

            def selects(path: Path, root: Path = root, source: Any = source) -> bool:
                if not path.is_relative_to(root):
                    return False
                relative = path.relative_to(root).as_posix()
                hidden = any(part.startswith(".") for part in relative.split("/"))
                return not hidden and bool(source.selects(relative))

            yield root, selects
