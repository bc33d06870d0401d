"""The Ray executor: files are parsed (and chunked, and embedded by a ``cpu_bound`` model) by Ray tasks.

With ``embedding_cpus`` or ``embedding_gpus`` set, every model embeds in an
embedding stage of its own: Ray tasks of ``embedding_batch_size`` texts that
reserve those resources, so a GPU node embeds while CPU nodes parse.

Ray schedules the tasks across a cluster's nodes and retries a task whose
worker process or node died; the runner, in the driver, still decides what
changed, writes to the store, prunes and reports, so a collection ends with
the same contents as with the local executor. Workers hand their chunks back
rather than writing: a run then needs the store reachable from the driver
only, and the driver's writes keep the crash-safe order (chunk 0 last).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections import deque
from collections.abc import Sequence
from typing import Any, ClassVar

from pydantic import Field

from .._errors import ParserError
from ..embedding import EmbeddingInput, EmbeddingModelBase, EmbeddingResponse
from ..rag import Chunk, KnowledgeBase
from ..rag._chunkers.base import ChunkerBase
from ..rag._parsers.base import ParserBase
from .base import ExecutorBase, IndexingComponents, Prepared, StartedExecutor, time_limit_reason
from .local import Outcome, Request, Waiting, outcome, settle

logger = logging.getLogger("ragflow_config.pipeline")


class RayExecutor(ExecutorBase):
    """Ray tasks across a cluster (the `ray` extra): up to `files_per_task` files per task, `parse_cpus` each."""

    requires: ClassVar[dict[str, str]] = {"ray": "ray"}

    class Parameters(ExecutorBase.Parameters):
        address: str | None = Field(
            default=None,
            description="The cluster to join: `auto` (the one `ray start` runs on this machine), "
            "`ray://host:10001`, or unset: `RAY_ADDRESS`, else a Ray started for the run on "
            "this machine. Ignored when the process has already called `ray.init`.",
        )
        parse_cpus: float = Field(
            default=1, gt=0, description="CPUs each file's task reserves on its node."
        )
        max_retries: int = Field(
            default=3,
            ge=0,
            description="Times a file's task runs again elsewhere when its worker process or "
            "node dies; after that the file fails alone.",
        )
        embedding_cpus: float | None = Field(
            default=None,
            gt=0,
            description="CPUs each embedding task reserves. Set (or `embedding_gpus`), every "
            "model embeds in Ray tasks of `embedding_batch_size` texts; unset, a model that "
            "is not `cpu_bound` (such as `minilm`) embeds in the driver.",
        )
        embedding_gpus: float = Field(
            default=0,
            ge=0,
            description="GPUs each embedding task reserves (a fraction shares one GPU); "
            "above 0, every model embeds in Ray tasks, on nodes that have GPUs.",
        )
        embedding_batch_size: int = Field(
            default=64, ge=1, description="Texts each embedding task embeds."
        )
        files_per_task: int = Field(
            default=8,
            ge=1,
            description="Files one parse task may take, when files queue behind busy slots: "
            "fewer tasks, and the parser, chunker and model sent once per task. A task that "
            "passes `parse_timeout_seconds` or whose worker dies on every retry runs again "
            "one file per task, so only the file at fault fails.",
        )

    parameters: Parameters

    def start(self, plans: Sequence[IndexingComponents], workers: int | None) -> RayTasks:
        return RayTasks(self.parameters)


class RayTasks(StartedExecutor):
    """The run's side of the cluster: at most one task per free parse slot, so a task starts when sent.

    A task parses up to ``files_per_task`` files: each task costs a submission,
    the pickling of its parser, chunker and model, and an object-store round
    trip, which one file per task paid for every file (issue 40: twice the
    local executor's CPU on one node). Files that queue while every slot is
    busy share a task; the first files of a run go alone, at once.
    """

    def __init__(self, parameters: RayExecutor.Parameters) -> None:
        import ray

        self._ray = ray
        self._timeout = parameters.parse_timeout_seconds
        self._connected_here = not ray.is_initialized()
        if self._connected_here:
            ray.init(address=parameters.address, include_dashboard=False)
        # A task's time limit counts from when it is sent, so tasks are not sent
        # to wait in the cluster's queue: one per slot the cluster has now.
        cpus = ray.cluster_resources().get("CPU", 1.0)
        self._slots = max(1, int(cpus // parameters.parse_cpus))
        self._files_per_task = parameters.files_per_task
        # A task's worth of files waiting behind each running one, and as many being written.
        self.files_in_flight = max(4, 4 * self._files_per_task * self._slots)
        self._waiting: deque[Waiting] = deque()
        self._running: set[asyncio.Task[None]] = set()
        self._task = ray.remote(_prepare_in_task).options(
            num_cpus=parameters.parse_cpus, max_retries=parameters.max_retries
        )
        self.embeds_every_model = (
            parameters.embedding_cpus is not None or parameters.embedding_gpus > 0
        )
        self._embedding_batch_size = parameters.embedding_batch_size
        # Each model of the embedding stage, put in the object store once, under a key
        # by which a worker process keeps the copy it loaded (``_embed_in_task``).
        self._stage_models: dict[int, tuple[EmbeddingModelBase, str, Any]] = {}
        self._embed_task = ray.remote(_embed_in_task).options(
            num_cpus=parameters.embedding_cpus or 0,
            num_gpus=parameters.embedding_gpus,
            max_retries=parameters.max_retries,
        )

    async def prepare(
        self,
        parser: ParserBase,
        chunker: ChunkerBase,
        model: EmbeddingModelBase | None,
        data: bytes,
        filename: str,
        backlog: int | None = None,
    ) -> Prepared:
        embedding_stage = self.embeds_every_model and model is not None
        request = (parser, chunker, None if embedding_stage else model, data, filename)
        future: asyncio.Future[Prepared] = asyncio.get_running_loop().create_future()
        self._waiting.append(Waiting(request, future))
        self._send()
        prepared = await future
        if embedding_stage and model is not None:
            return await self._embed(model, prepared[0])
        return prepared

    def _send(self) -> None:
        """Send waiting files, up to ``files_per_task`` to a task, while a slot is free."""
        while self._waiting and len(self._running) < self._slots:
            group = [self._waiting.popleft()]
            while (
                not group[0].suspect
                and self._waiting
                and not self._waiting[0].suspect
                and len(group) < self._files_per_task
            ):
                group.append(self._waiting.popleft())
            group = [waiting for waiting in group if not waiting.future.done()]  # gave up
            if group:
                running = asyncio.ensure_future(self._run(group))
                self._running.add(running)
                running.add_done_callback(self._ran)

    def _ran(self, running: asyncio.Task[None]) -> None:
        self._running.discard(running)
        self._send()

    async def _run(self, group: list[Waiting]) -> None:
        exceptions = self._ray.exceptions
        ref = self._task.remote([waiting.request for waiting in group])
        try:
            outcomes: list[Outcome] = await asyncio.wait_for(
                asyncio.wrap_future(ref.future()), self._timeout
            )
        except TimeoutError:
            # force: a parser stuck in C code never reaches a cancellation point.
            self._ray.cancel(ref, force=True)
            self._failed(group, time_limit_reason(self._timeout))
        except (exceptions.WorkerCrashedError, exceptions.NodeDiedError) as exc:
            self._failed(
                group,
                "the Ray worker died while handling this file, on every retry "
                f"(a crash in a parsing library, or out of memory): {type(exc).__name__}",
            )
        except BaseException as exc:
            for waiting in group:
                if not waiting.future.done():
                    waiting.future.set_exception(exc)
            if not isinstance(exc, Exception):
                raise
        else:
            settle(group, outcomes)

    def _failed(self, group: list[Waiting], reason: str) -> None:
        """A file alone fails for ``reason``; a task of several runs them again, one file a task,
        so only the file that hangs or kills its worker fails."""
        if len(group) == 1:
            [waiting] = group
            if not waiting.future.done():
                waiting.future.set_exception(ParserError(waiting.request[4], reason))
            return
        for waiting in reversed(group):
            self._waiting.appendleft(Waiting(waiting.request, waiting.future, suspect=True))

    async def _embed(self, model: EmbeddingModelBase, chunks: list[Chunk]) -> Prepared:
        """``chunks`` with their vectors from the embedding stage, as the local executor makes them."""
        # As in the local executor: a long document's vectors would all be in the
        # driver's memory at once; the knowledge base embeds it a batch at a time.
        if len(chunks) > KnowledgeBase.write_batch:
            return chunks, None
        texts = [chunk.content for chunk in chunks if model.can_embed(chunk.content)]
        size = self._embedding_batch_size
        if id(model) not in self._stage_models:
            self._stage_models[id(model)] = (model, uuid.uuid4().hex, self._ray.put(model))
        _, key, stored = self._stage_models[id(model)]
        refs = [
            self._embed_task.remote(key, stored, texts[i : i + size])
            for i in range(0, len(texts), size)
        ]
        try:
            batches: list[EmbeddingResponse] = await asyncio.gather(
                *(asyncio.wrap_future(ref.future()) for ref in refs)
            )
        except self._ray.exceptions.RayTaskError as exc:  # the model's own error, as raised there
            raise exc.cause from None
        return chunks, EmbeddingResponse(
            embeddings=[vector for batch in batches for vector in batch.embeddings],
            cache_hits=sum(batch.cache_hits for batch in batches),
            cache_misses=sum(batch.cache_misses for batch in batches),
        )

    def shutdown(self) -> None:
        if self._connected_here:
            self._ray.shutdown()


def _prepare_in_task(requests: list[Request]) -> list[Outcome]:
    return [outcome(request) for request in requests]


#: The embedding stage's models this Ray worker process has loaded, by their run's key,
#: oldest first. A worker runs many tasks, and loading a model (MiniLM's tokenizer and
#: ONNX session) costs more CPU than embedding a batch: each task would load its copy.
_loaded_models: dict[str, EmbeddingModelBase] = {}
#: Models kept per worker: a run's embedding models, not every run's a long-lived cluster saw.
_LOADED_MODELS_KEPT = 2


def _embed_in_task(
    key: str, model: EmbeddingModelBase, texts: Sequence[EmbeddingInput]
) -> EmbeddingResponse:
    """``texts`` embedded by the copy of ``model`` this worker loaded first under ``key``."""
    loaded = _loaded_models.get(key)
    if loaded is None:
        while len(_loaded_models) >= _LOADED_MODELS_KEPT:
            del _loaded_models[next(iter(_loaded_models))]
        loaded = _loaded_models[key] = model
    return asyncio.run(loaded(texts))
