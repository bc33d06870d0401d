"""The Ray executor: each file is parsed (and chunked, and embedded by a ``cpu_bound`` model) by a Ray task.

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
from collections.abc import Sequence
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field

from .._errors import ParserError
from ..embedding import EmbeddingInput, EmbeddingModelBase, EmbeddingResponse
from ..rag import Chunk, KnowledgeBase
from ..rag._chunkers.base import ChunkerBase
from ..rag._parsers.base import ParserBase
from .base import ExecutorBase, Prepared, StartedExecutor, time_limit_reason
from .local import _prepare_sync

if TYPE_CHECKING:
    from ..pipeline._build import IndexingPlan

logger = logging.getLogger("ragflow_config.pipeline")


class RayExecutor(ExecutorBase):
    """Ray tasks across a cluster (the `ray` extra): one file per task, `parse_cpus` each."""

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

    parameters: Parameters

    def start(self, plans: Sequence[IndexingPlan], workers: int | None) -> RayTasks:
        return RayTasks(self.parameters)


class RayTasks(StartedExecutor):
    """The run's side of the cluster: at most one task per free parse slot, so a task starts when sent."""

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
        slots = max(1, int(cpus // parameters.parse_cpus))
        self._slots = asyncio.Semaphore(slots)
        self.files_in_flight = max(4, 4 * slots)
        self._task = ray.remote(_prepare_in_task).options(
            num_cpus=parameters.parse_cpus, max_retries=parameters.max_retries
        )
        self.embeds_every_model = (
            parameters.embedding_cpus is not None or parameters.embedding_gpus > 0
        )
        self._embedding_batch_size = parameters.embedding_batch_size
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
        exceptions = self._ray.exceptions
        embedding_stage = self.embeds_every_model and model is not None
        async with self._slots:
            ref = self._task.remote(
                parser, chunker, None if embedding_stage else model, data, filename
            )
            try:
                prepared: Prepared = await asyncio.wait_for(
                    asyncio.wrap_future(ref.future()), self._timeout
                )
            except TimeoutError:
                # force: a parser stuck in C code never reaches a cancellation point.
                self._ray.cancel(ref, force=True)
                raise ParserError(filename, time_limit_reason(self._timeout)) from None
            except exceptions.RayTaskError as exc:  # the parser's own error, as raised there
                raise exc.cause from None
            except (exceptions.WorkerCrashedError, exceptions.NodeDiedError) as exc:
                raise ParserError(
                    filename,
                    "the Ray worker died while handling this file, on every retry "
                    f"(a crash in a parsing library, or out of memory): {type(exc).__name__}",
                ) from None
        if embedding_stage and model is not None:
            return await self._embed(model, prepared[0])
        return prepared

    async def _embed(self, model: EmbeddingModelBase, chunks: list[Chunk]) -> Prepared:
        """``chunks`` with their vectors from the embedding stage, as the local executor makes them."""
        # As in the local executor: a long document's vectors would all be in the
        # driver's memory at once; the knowledge base embeds it a batch at a time.
        if len(chunks) > KnowledgeBase.write_batch:
            return chunks, None
        texts = [chunk.content for chunk in chunks if model.can_embed(chunk.content)]
        size = self._embedding_batch_size
        refs = [
            self._embed_task.remote(model, texts[i : i + size]) for i in range(0, len(texts), size)
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


def _prepare_in_task(
    parser: ParserBase,
    chunker: ChunkerBase,
    model: EmbeddingModelBase | None,
    data: bytes,
    filename: str,
) -> Prepared:
    return _prepare_sync((parser, chunker, model, data, filename))


def _embed_in_task(model: EmbeddingModelBase, texts: Sequence[EmbeddingInput]) -> EmbeddingResponse:
    return asyncio.run(model(texts))
