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
import logging
import multiprocessing
import os
from collections.abc import Iterable

from ..embedding import EmbeddingModelBase
from ..rag import Chunk
from ..rag._chunkers.base import ChunkerBase
from ..rag._parsers.base import ParserBase
from ._build import IndexingPlan

logger = logging.getLogger("ragflow_config.pipeline")

Prepared = tuple[list[Chunk], list[list[float]] | None]


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
        self._started: asyncio.Future[bool] | None = None

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
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._executor, _prepare_sync, parser, chunker, model, data, filename
        )

    def shutdown(self) -> None:
        self._executor.shutdown(cancel_futures=True)


async def parse_and_chunk(
    parser: ParserBase, chunker: ChunkerBase, data: bytes, filename: str
) -> list[Chunk]:
    sections = await parser.parse(data, filename)
    return await chunker.chunk(sections)


def _prepare_sync(
    parser: ParserBase,
    chunker: ChunkerBase,
    model: EmbeddingModelBase | None,
    data: bytes,
    filename: str,
) -> Prepared:
    """The worker side of ``prepare``: the vectors are for the chunks ``model`` can embed, in order."""
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
