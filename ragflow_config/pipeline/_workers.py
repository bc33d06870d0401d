"""Parser processes: parsing, chunking and CPU-bound embedding beside the event loop.

Parsers (and models that embed in pure Python) hold the GIL, so a run hands
them to worker processes and keeps the event loop for reading files and
writing to the store. The processes take a moment to start; until they have,
the event loop does the work itself, so a run's first files (and a small
run's only ones) never wait for them.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import multiprocessing
import os
import pickle
from collections import deque
from collections.abc import Iterable

from ..embedding import EmbeddingModelBase
from ..rag import Chunk
from ..rag._chunkers.base import ChunkerBase
from ..rag._parsers.base import ParserBase
from ._build import IndexingPlan

logger = logging.getLogger("ragflow_config.pipeline")

Prepared = tuple[list[Chunk], list[list[float]] | None]
Request = tuple[ParserBase, ChunkerBase, EmbeddingModelBase | None, bytes, str]
Outcome = tuple[bool, Prepared | BaseException]
_FILES_PER_TASK = 8


class ParserProcesses:
    """A pool of ``workers`` processes for the parsers, chunkers and models of ``plans``."""

    def __init__(self, workers: int, plans: Iterable[IndexingPlan]) -> None:
        plans = list(plans)
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
            libraries = {name for plan in plans for parser in plan.parsers for name in parser.libraries}
            context.set_forkserver_preload([__name__, *sorted(components | libraries)])
        self._executor = concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=context, initializer=_yield_to_the_event_loop
        )
        self._workers = workers
        self._started: asyncio.Future[bool] | None = None
        self._waiting: deque[tuple[Request, asyncio.Future[Prepared]]] = deque()
        self._tasks = 0

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

    @property
    def _ready(self) -> bool:
        started = self._started
        return started is not None and started.done() and started.result()

    async def prepare(
        self,
        parser: ParserBase,
        chunker: ChunkerBase,
        model: EmbeddingModelBase | None,
        data: bytes,
        filename: str,
    ) -> Prepared:
        """Parse and chunk, and embed too when ``model`` is given, in a process.

        Until the processes have started, this process parses and chunks and
        returns no vectors: the caller embeds. The first call starts them.
        """
        self._start_in_background()
        if not self._ready:
            return await parse_and_chunk(parser, chunker, data, filename), None
        future: asyncio.Future[Prepared] = asyncio.get_running_loop().create_future()
        self._waiting.append(((parser, chunker, model, data, filename), future))
        self._send()
        return await future

    def _send(self) -> None:
        """Send waiting files to the processes, several to a task once every process is busy.

        Each task costs a round trip through the executor's threads in this
        process; files that queue up while the processes work share one.
        """
        loop = asyncio.get_running_loop()
        # Two tasks per process: one runs while the other's files and results travel.
        while self._tasks < 2 * self._workers and self._waiting:
            group: list[tuple[Request, asyncio.Future[Prepared]]] = []
            while self._waiting and len(group) < _FILES_PER_TASK:
                request, future = self._waiting.popleft()
                if not future.done():  # its caller gave up
                    group.append((request, future))
            if not group:
                return
            self._tasks += 1
            task = loop.run_in_executor(self._executor, _prepare_many, [r for r, _ in group])
            task.add_done_callback(functools.partial(self._settle, [f for _, f in group]))

    def _settle(
        self, futures: list[asyncio.Future[Prepared]], task: asyncio.Future[list[Outcome]]
    ) -> None:
        self._tasks -= 1
        if task.cancelled():  # the pool shut down
            for future in futures:
                future.cancel()
            return
        if (error := task.exception()) is not None:  # e.g. a process died
            outcomes: list[Outcome] = [(False, error)] * len(futures)
        else:
            outcomes = task.result()
        for future, (ok, value) in zip(futures, outcomes, strict=True):
            if future.done():
                continue
            if ok:
                future.set_result(value)  # type: ignore[arg-type]
            else:
                future.set_exception(value)  # type: ignore[arg-type]
        self._send()

    def shutdown(self) -> None:
        self._executor.shutdown(cancel_futures=True)


async def parse_and_chunk(
    parser: ParserBase, chunker: ChunkerBase, data: bytes, filename: str
) -> list[Chunk]:
    sections = await parser.parse(data, filename)
    return await chunker.chunk(sections)


def _prepare_many(requests: list[Request]) -> list[Outcome]:
    """The worker side of a task: each file's result, or the error it raised."""
    outcomes: list[Outcome] = []
    for request in requests:
        try:
            outcomes.append((True, _prepare_sync(request)))
        except Exception as exc:
            try:
                pickle.dumps(exc)
            except Exception:  # the error must travel back, or the whole task fails
                exc = RuntimeError(f"{type(exc).__name__}: {exc}")
            outcomes.append((False, exc))
    return outcomes


def _prepare_sync(request: Request) -> Prepared:
    """The worker side of ``prepare``: the vectors are for the chunks ``model`` can embed, in order."""
    parser, chunker, model, data, filename = request
    global _worker_loop
    if _worker_loop is None:  # one loop per worker process, not one per file
        _worker_loop = asyncio.new_event_loop()
    chunks = _worker_loop.run_until_complete(parse_and_chunk(parser, chunker, data, filename))
    if model is None:
        return chunks, None
    texts = [chunk.content for chunk in chunks if model.can_embed(chunk.content)]
    vectors = _worker_loop.run_until_complete(model(texts)).embeddings if texts else []
    return chunks, vectors


_worker_loop: asyncio.AbstractEventLoop | None = None


def _yield_to_the_event_loop() -> None:
    """Parser processes give way to the event loop's store writes, the pipeline's serial part."""
    if hasattr(os, "nice"):
        os.nice(5)
