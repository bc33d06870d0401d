"""The local executor: parsing, chunking and CPU-bound embedding in processes beside the event loop.

Parsers (and models that embed in pure Python) hold the GIL, so a run hands
them to worker processes and keeps the event loop for reading files and
writing to the store. The processes take most of a second to start, so they
start only when the files ahead would keep this process busy for longer than
that; until they have, the event loop does the work itself, so a run's first
files (and a small run's only ones) never wait for them. A process that dies
(a crashing parsing library, the OOM killer) is replaced, and the file that
killed it is found by running the files that were in flight one at a time.

A file that parses for longer than ``parse_timeout_seconds`` ends its process
the same way (a watchdog thread in the process, which needs no GIL, exits it),
so a parser stuck in a C loop that never returns to Python is stopped too; run
again alone, it fails with its time limit as the reason.

The processes end with the run however it ends. An end it sees (an error, a
signal it handles) shuts the pool down. Killed outright (SIGKILL, the OOM
killer), it closes their lifeline, a pipe whose writing end only this process
holds, and each process exits when it reads its end of file; the fork server
and multiprocessing's resource tracker, which live as long as a process holds
their pipes, exit after them, and the tracker unlinks the pool's semaphores.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import faulthandler
import functools
import logging
import multiprocessing
import multiprocessing.connection
import os
import pickle
import signal
import threading
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

from .._errors import ParserError
from .._observe import observed
from ..embedding import EmbeddingModelBase
from ..rag import Chunk, KnowledgeBase
from ..rag._chunkers.base import ChunkerBase
from ..rag._library_warnings import attributed_warnings, handle_records, kept_records
from ..rag._parsers.base import ParserBase
from .base import ExecutorBase, IndexingComponents, Prepared, StartedExecutor, time_limit_reason

logger = logging.getLogger("ragflow_config.pipeline")

Request = tuple[ParserBase, ChunkerBase, EmbeddingModelBase | None, bytes, str]
# A file's result or error, and the log records of WARNING or above the worker kept while
# it ran (``kept_records``): they are logged in the runner's process, by ``settle``.
Outcome = tuple[bool, Prepared | BaseException, list[logging.LogRecord]]
FILES_PER_TASK = 8
# Parsing ahead, in seconds of this process's time, that is worth starting the
# processes for: about what their start takes (importing the parsers' libraries).
_WORTH_STARTING = 0.5


@dataclass
class Waiting:
    """A file sent to the workers, and the future its result is set on."""

    request: Request
    future: asyncio.Future[Prepared]
    #: Sent alone: it was in a task that ran out of time, or whose worker died on every retry.
    suspect: bool = False


def settle(group: Sequence[Waiting], outcomes: Sequence[Outcome]) -> None:
    """Each file's future gets its outcome, unless it is settled already (a time limit)."""
    for waiting, (ok, value, records) in zip(group, outcomes, strict=True):
        handle_records(records)
        if waiting.future.done():
            continue
        if ok:
            waiting.future.set_result(value)  # type: ignore[arg-type]
        else:
            waiting.future.set_exception(value)  # type: ignore[arg-type]


class LocalExecutor(ExecutorBase):
    """Parser processes on this machine, `--workers` of them (default: up to 4, one per core)."""

    def start(
        self, plans: Sequence[IndexingComponents], workers: int | None
    ) -> ParserProcesses | None:
        if workers is None:
            workers = min(4, os.cpu_count() or 1)
        if workers == 0:
            return None
        return ParserProcesses(workers, plans, self.parameters.parse_timeout_seconds)


class ParserProcesses(StartedExecutor):
    """A pool of ``workers`` processes for the parsers, chunkers and models of ``plans``."""

    def __init__(
        self, workers: int, plans: Sequence[IndexingComponents], parse_timeout: float = 300
    ) -> None:
        # forkserver: forking a process that runs threads (the event loop's, a model's) can deadlock.
        context = multiprocessing.get_context("forkserver" if os.name == "posix" else "spawn")
        if os.name == "posix":
            # Workers fork from a server that has imported, once, what they would
            # each import before their first file: this module, the modules of the
            # components sent to them and the libraries their parsers declare.
            components = {
                type(component).__module__
                for plan in plans
                for component in (*plan.parsers, plan.chunker, plan.knowledge_base.embedding_model)
            }
            libraries = {
                name for plan in plans for parser in plan.parsers for name in parser.requires
            }
            context.set_forkserver_preload(
                [__name__, *sorted(components | libraries), f"{__package__}._frozen"]
            )
        self._context = context
        self._lifeline_end, self._lifeline = context.Pipe(duplex=False)
        self._closed = False
        self._workers = workers
        self._parse_timeout = parse_timeout
        # Enough to keep every process's two tasks full while the event loop
        # writes out a finished task's files (with 16, the processes idled).
        self.files_in_flight = max(4, 4 * FILES_PER_TASK * workers)
        self._executor = self._new_executor()
        self._started: asyncio.Future[bool] | None = None
        self._waiting: deque[Waiting] = deque()
        self._tasks = 0
        self._suspect_running = False
        self._prepared_here = 0
        self._seconds_here = 0.0

    def _new_executor(self) -> concurrent.futures.ProcessPoolExecutor:
        return concurrent.futures.ProcessPoolExecutor(
            self._workers,
            mp_context=self._context,
            initializer=_start_worker,
            initargs=(self._lifeline_end,),
        )

    def _start_in_background(self) -> None:
        if self._started is None:
            # Starting them blocks until the fork server has imported its modules.
            self._started = asyncio.get_running_loop().run_in_executor(None, self._start)

    def _start(self) -> bool:
        try:
            self._executor.submit(int).result()
        except concurrent.futures.CancelledError:  # the run ended first
            return False
        except Exception as exc:
            logger.warning("parser processes did not start (%s); parsing in this process", exc)
            return False
        return True

    def _worth_starting(self, backlog: int | None) -> bool:
        if backlog is None:
            return True
        if not self._prepared_here:  # nothing measured yet: the first file tells
            return False
        return backlog * self._seconds_here / self._prepared_here >= _WORTH_STARTING

    @property
    def started(self) -> bool:
        """Whether the processes have started and take the files now."""
        started = self._started
        return started is not None and started.done() and started.result()

    async def prepare(
        self,
        parser: ParserBase,
        chunker: ChunkerBase,
        model: EmbeddingModelBase | None,
        data: bytes,
        filename: str,
        backlog: int | None = None,
    ) -> Prepared:
        """Parse and chunk, and embed too when ``model`` is given, in a process.

        Until the processes have started, this process does the same work.
        ``backlog`` is how many files are expected after this one: the
        processes start once doing those here would take longer than starting
        them. ``None`` (unknown) starts them at once.
        """
        if self._started is None and self._worth_starting(backlog):
            self._start_in_background()
        if not self.started:
            began = time.perf_counter()
            prepared = await _prepare(parser, chunker, model, data, filename)
            self._seconds_here += time.perf_counter() - began
            self._prepared_here += 1
            return prepared
        future: asyncio.Future[Prepared] = asyncio.get_running_loop().create_future()
        self._waiting.append(Waiting((parser, chunker, model, data, filename), future))
        self._send()
        return await future

    def _send(self) -> None:
        """Send waiting files to the processes, several to a task once every process is busy.

        Each task costs a round trip through the executor's threads in this
        process; files that queue up while the processes work share one. A
        suspect (a file in flight when a process died) runs alone, with
        nothing else in flight, so a crash it causes is pinned on it.
        """
        while self._waiting and not self._suspect_running and not self._closed:
            if self._waiting[0].suspect:
                if self._tasks:
                    return  # wait until the pool is idle
                group = [self._waiting.popleft()]
            elif self._tasks < 2 * self._workers:
                # Two tasks per process: one runs while the other's files and results travel.
                group = []
                while (
                    self._waiting and not self._waiting[0].suspect and len(group) < FILES_PER_TASK
                ):
                    group.append(self._waiting.popleft())
            else:
                return
            group = [
                waiting for waiting in group if not waiting.future.done()
            ]  # callers that gave up
            if not group:
                continue
            executor = self._executor
            try:
                task = asyncio.get_running_loop().run_in_executor(
                    executor,
                    _prepare_many,
                    [waiting.request for waiting in group],
                    self._parse_timeout,
                )
            except concurrent.futures.process.BrokenProcessPool:
                # A process died and the loop has not settled its task yet: the pool
                # refuses work at once. These files never ran; new processes take them
                # (lost here, their callers would wait for ever).
                self._waiting.extendleft(reversed(group))
                self._replace(executor)
                continue
            self._suspect_running = group[0].suspect
            self._tasks += 1
            task.add_done_callback(
                functools.partial(self._settle, executor, group, time.monotonic())
            )

    def _settle(
        self,
        executor: concurrent.futures.Executor,
        group: list[Waiting],
        sent: float,
        task: asyncio.Future[list[Outcome]],
    ) -> None:
        self._tasks -= 1
        if group[0].suspect:
            self._suspect_running = False
        if task.cancelled():  # the pool shut down
            for waiting in group:
                waiting.future.cancel()
            return
        error = task.exception()
        if isinstance(error, concurrent.futures.process.BrokenProcessPool):
            self._after_a_crash(executor, group, time.monotonic() - sent)
            self._send()
            return
        outcomes: list[Outcome] = [(False, error, [])] * len(group) if error else task.result()
        settle(group, outcomes)
        self._send()

    def _after_a_crash(
        self, executor: concurrent.futures.Executor, group: list[Waiting], seconds: float
    ) -> None:
        """A process died (a parser library crashed, ran out of memory or out of time): start new ones.

        A suspect that was running alone caused it and fails; every other file
        of the broken tasks runs again, alone, as a suspect. A suspect's
        process that died after its time limit had passed was ended by it.
        """
        self._replace(executor)
        for waiting in reversed(group):
            if waiting.suspect:
                reason = (
                    time_limit_reason(self._parse_timeout)
                    if seconds >= self._parse_timeout
                    else "the parser process died while handling this file "
                    "(a crash in a parsing library, or out of memory)"
                )
                waiting.future.set_exception(ParserError(waiting.request[4], reason))
            else:
                self._waiting.appendleft(Waiting(waiting.request, waiting.future, suspect=True))

    def _replace(self, executor: concurrent.futures.Executor) -> None:
        """New processes for a pool that broke, once however many of its tasks report it.

        None once the run has ended: its end broke the pool, and nothing waits for them.
        """
        if executor is self._executor and not self._closed:
            logger.warning("a parser process died; starting new ones")
            self._executor = self._new_executor()
            executor.shutdown(wait=False, cancel_futures=True)

    def shutdown(self) -> None:
        """The processes finish the tasks they are running, then end; so does any the pool
        lost, when the lifeline closes. Ending them mid-task instead can cut a result in
        the middle of the pipe, where the pool's reading thread then waits for ever."""
        self._closed = True
        self._executor.shutdown(cancel_futures=True)
        self._lifeline.close()
        self._lifeline_end.close()


async def parse_and_chunk(
    parser: ParserBase, chunker: ChunkerBase, data: bytes, filename: str
) -> list[Chunk]:
    with attributed_warnings(filename):
        with observed("parse", path=filename):
            sections = await parser.parse(data, filename)
        with observed("chunk", path=filename):
            return await chunker.chunk(sections)


def _prepare_many(requests: list[Request], parse_timeout: float) -> list[Outcome]:
    """The worker side of a task: each file's result, or the error it raised.

    Past a file's time limit, faulthandler prints where the parser is stuck to
    stderr and the process ends (``_watch``).
    """
    outcomes: list[Outcome] = []
    for request in requests:
        _watch(parse_timeout)
        try:
            outcomes.append(outcome(request))
        finally:
            _unwatch()
    return outcomes


def outcome(request: Request) -> Outcome:
    """A file's result, or the error it raised, and what it logged, in a form that travels
    back from a worker."""
    with kept_records() as records:
        try:
            result: Prepared | BaseException = _prepare_sync(request)
            ok = True
        except Exception as exc:
            try:
                pickle.dumps(exc)
            except Exception:  # the error must travel back, or the whole task fails
                exc = RuntimeError(f"{type(exc).__name__}: {exc}")
            result, ok = exc, False
    return ok, result, records


# A file's time limit is an interval timer whose SIGALRM faulthandler answers in C, so
# a parser stuck in C code that holds the GIL is caught too: it prints where the parser
# is stuck, then the signal's default action ends the process. Arming the timer is one
# system call, where faulthandler.dump_traceback_later starts (and cancelling joins) a
# thread for every file: a quarter of a parser process's samples under py-spy on a
# loaded host. Without interval timers (Windows), the watchdog thread does it.
_TIMER = hasattr(signal, "setitimer")


def _watch(seconds: float) -> None:
    if _TIMER:
        signal.setitimer(signal.ITIMER_REAL, seconds)
    else:
        faulthandler.dump_traceback_later(seconds, exit=True)


def _unwatch() -> None:
    if _TIMER:
        signal.setitimer(signal.ITIMER_REAL, 0)
    else:
        faulthandler.cancel_dump_traceback_later()


async def _prepare(
    parser: ParserBase,
    chunker: ChunkerBase,
    model: EmbeddingModelBase | None,
    data: bytes,
    filename: str,
) -> Prepared:
    """The vectors are for the chunks ``model`` can embed, in order; none without a model.

    A document of more than one write batch gets none either: its vectors,
    made all at once here, would all be in memory at once, in this process
    and the one that writes; the knowledge base embeds it a batch at a time.
    """
    chunks = await parse_and_chunk(parser, chunker, data, filename)
    if model is None or len(chunks) > KnowledgeBase.write_batch:
        return chunks, None
    texts = [chunk.content for chunk in chunks if model.can_embed(chunk.content)]
    return chunks, await model(texts)


def _prepare_sync(request: Request) -> Prepared:
    """The worker side of ``prepare``."""
    global _worker_loop
    if _worker_loop is None:  # one loop per worker process, not one per file
        _worker_loop = asyncio.new_event_loop()
    return _worker_loop.run_until_complete(_prepare(*request))


_worker_loop: asyncio.AbstractEventLoop | None = None


def _start_worker(lifeline: multiprocessing.connection.Connection) -> None:
    """Parser processes give way to the event loop's store writes, the pipeline's serial
    part, answer their time limit's alarm (see ``_watch``) and end with the run's process
    (see ``_exit_with_the_run``)."""
    threading.Thread(target=_exit_with_the_run, args=(lifeline,), daemon=True).start()
    if hasattr(os, "nice"):
        os.nice(5)
    if _TIMER:  # chained to the default action, which ends the process
        faulthandler.register(signal.SIGALRM, chain=True)


def _exit_with_the_run(lifeline: multiprocessing.connection.Connection) -> None:
    """Exit when the run's process closes the lifeline or dies, whatever this process is doing.

    Waiting for its task queue instead would never end: each worker holds both of
    that pipe's ends, so its end of file never comes.
    """
    with contextlib.suppress(EOFError):
        lifeline.recv_bytes()  # nothing is ever sent: this returns at end of file
    os._exit(0)
