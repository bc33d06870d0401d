"""The knowledge bases of one pipeline, built once and served read-only to both front ends.

``KnowledgeService`` owns the built pipeline. A supervisor task builds it
and keeps it open; when a store cannot be reached at start the service
still starts, not ready, and builds again (with backoff, and at once when a
request asks) until the store answers. Once built, a store that goes away
makes requests fail with :class:`Unavailable` (HTTP 503) until it returns:
the stores reconnect by themselves, so no restart is needed.

The MCP tool is the agentic ``RAGMiddleware``'s own ``search_knowledge``
tool, taken from the pipeline's ``middlewares:`` block (see
:func:`tool_middleware_index`), so its name, arguments, description, ranking
and result text are the agent's.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Coroutine, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, TypeVar, cast

from .._errors import (
    CollectionMismatchError,
    EmbeddingError,
    RagflowError,
    UnstorableDocumentError,
    VectorStoreError,
)
from .._search_input import echoed
from ..message import DataBlock, TextBlock
from ..middleware import RAGMiddleware
from ..middleware._rag.format import Query
from ..middleware._rag.search import Searchable
from ..middleware._rag.tool import SearchKnowledgeTool
from ..pipeline import Pipeline
from ..pipeline._build import BuiltPipeline
from ..pipeline._generations import most_common, state
from ..pipeline._spec import MiddlewareSpec, PipelineSpec
from ..rag import Chunk, DocumentSummary, KnowledgeBase, VectorSearchResult
from ..rag._stores.base import flatten_filter

logger = logging.getLogger("ragflow_config.server")

Blocks = list[TextBlock | DataBlock]
T = TypeVar("T")


class ServiceError(RagflowError):
    """A request the service cannot answer; ``status`` is its HTTP status.

    ``kind`` names the library's exception the failure stands for (a
    ``RemoteKnowledgeBase`` raises it again), when there is one.
    """

    status = 500
    kind: str | None = None


class BadRequest(ServiceError):
    status = 400


class NotFound(ServiceError):
    status = 404


class UnsupportedMediaType(ServiceError):
    status = 415


class Unavailable(ServiceError):
    """A store or embedding service cannot be reached now; retrying later may succeed."""

    status = 503

    def __init__(self, message: str, *, kind: str = "VectorStoreError") -> None:
        super().__init__(message)
        self.kind = kind


def is_transient(exc: BaseException) -> bool:
    """A failure that may pass when a store or service comes back."""
    if isinstance(exc, UnstorableDocumentError):
        return False
    return isinstance(
        exc, (VectorStoreError, EmbeddingError, ConnectionError, TimeoutError, asyncio.TimeoutError)
    )


def describe_failure(exc: BaseException) -> str:
    """One line for the server's log: what is down and where, without a traceback."""
    if isinstance(exc, (VectorStoreError, EmbeddingError, CollectionMismatchError)):
        return str(exc)
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"


def client_failure(exc: BaseException) -> str:
    """What a client is told of a failure: which service is down, never its address.

    A store's or model's own message names its host, port or URL (inside a
    private network, say), so the details go to the server's log only.
    """
    if isinstance(exc, CollectionMismatchError):
        return str(exc)  # the collection's dimensions against the model's: no address
    if isinstance(exc, EmbeddingError):
        return "the embedding service cannot be reached now; the server's log has the details"
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        return "the vector store did not answer in time; the server's log has the details"
    return "the vector store cannot be reached now; the server's log has the details"


def failure_kind(exc: BaseException) -> str:
    """The library's exception a client is told a failure stands for."""
    if isinstance(exc, EmbeddingError):
        return "EmbeddingError"
    if isinstance(exc, CollectionMismatchError):
        return "CollectionMismatchError"
    return "VectorStoreError"


def _consume_outcome(task: asyncio.Future[Any]) -> None:
    """Retrieve a cancelled request's late outcome, so asyncio does not log it as never seen."""
    if not task.cancelled():
        task.exception()


def as_pipeline(pipeline: Pipeline | str | Path) -> Pipeline:
    """``pipeline``, loaded from its file when given a path."""
    return pipeline if isinstance(pipeline, Pipeline) else Pipeline.load(pipeline)


@dataclass(frozen=True)
class KnowledgeBaseStatus:
    """What the store says of a knowledge base: its counts, and what built its collection.

    The store keeps no time of a run; the last run is known by what it left:
    the live collection, the fingerprint most of its documents were indexed
    with (and how many were), and the collections kept from earlier rebuilds.
    """

    name: str
    description: str
    mode: str
    lexical: bool  # whether the live collection has a lexical side (lexical, hybrid modes)
    indexed: bool
    documents: int = 0
    chunks: int = 0
    collection: str = ""
    fingerprint: dict[str, str] = field(default_factory=dict)
    at_fingerprint: int = 0
    previous: list[str] = field(default_factory=list)
    building: str | None = None


@dataclass(frozen=True)
class KnowledgeBaseInfo:
    """What a client may know of a knowledge base: its name and description."""

    name: str
    description: str


def tool_middleware_index(spec: PipelineSpec, names: Sequence[str]) -> int | None:
    """Which ``middlewares:`` entry supplies the ``search_knowledge`` tool, or None.

    The first ``rag`` middleware in agentic mode over the served knowledge
    bases; else the first ``rag`` middleware over them in any mode (its
    top_k, threshold and reranker, offered as a tool); else none, and the
    tool searches every served knowledge base with the defaults.
    """
    candidates = [
        (index, middleware)
        for index, middleware in enumerate(spec.middlewares)
        if middleware.type == "rag" and set(middleware.knowledge_bases) <= set(names)
    ]
    for index, middleware in candidates:
        if middleware.parameters.get("mode", "agentic") == "agentic":
            return index
    return candidates[0][0] if candidates else None


class _Described:
    """A stand-in with a knowledge base's name and description, for the tool's declaration."""

    def __init__(self, name: str, description: str) -> None:
        self.name = name
        self.description = description


async def _not_built(*_: Any) -> list[VectorSearchResult]:
    raise Unavailable("the knowledge bases are not open yet: the vector store cannot be reached")


class KnowledgeService:
    """A pipeline's knowledge bases, open for searching and listing; use ``async with``."""

    def __init__(
        self,
        pipeline: Pipeline,
        knowledge_bases: Sequence[str] | None = None,
        *,
        retry_seconds: tuple[float, float] = (0.5, 30.0),
        attempt_timeout: float = 15.0,
        request_timeout: float = 10.0,
    ) -> None:
        names = list(knowledge_bases) if knowledge_bases else pipeline.knowledge_base_names
        pipeline._check_names(names)
        self._pipeline = pipeline
        self._names = names
        specs = {kb.name: kb for kb in pipeline.spec.knowledge_bases}
        self.infos = [KnowledgeBaseInfo(n, specs[n].description) for n in names]
        self._retry_seconds = retry_seconds
        self._attempt_timeout = attempt_timeout
        self._request_timeout = request_timeout
        self._client_error = "the service is starting"
        self._middleware_index = tool_middleware_index(pipeline.spec, names)
        middleware_spec = self.tool_middleware_spec
        tool_names = middleware_spec.knowledge_bases if middleware_spec else names
        # The tool's declaration depends only on names and descriptions, so it
        # is offered before the stores open: MCP clients list tools once.
        self._declared_tool = SearchKnowledgeTool(
            cast(list[KnowledgeBase], [_Described(n, specs[n].description) for n in tool_names]),
            _not_built,
        )
        self._built: BuiltPipeline | None = None
        self._tool: SearchKnowledgeTool | None = None
        self._error: str | None = "not started"
        self._fatal: BaseException | None = None
        self._present: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._stopping = asyncio.Event()
        self._kick = asyncio.Event()
        self._attempt: asyncio.Future[None] | None = None
        self._entered = False

    # -- life cycle --------------------------------------------------------

    @property
    def tool_middleware_spec(self) -> MiddlewareSpec | None:
        index = self._middleware_index
        return None if index is None else self._pipeline.spec.middlewares[index]

    async def __aenter__(self) -> KnowledgeService:
        self._stopping = asyncio.Event()
        self._kick = asyncio.Event()
        self._attempt = asyncio.get_running_loop().create_future()
        first = self._attempt
        self._entered = False
        self._task = asyncio.create_task(self._supervise(), name="ragflow-config serve: stores")
        # A store that does not answer at all (a dropped connection waits for its
        # timeout) does not hold the start up: the attempt goes on in the background.
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.shield(first), timeout=self._attempt_timeout)
        if self._fatal is not None:
            await self._task
            raise self._fatal
        if not first.done():
            logger.warning("not ready yet: the stores have not answered; still trying")
        self._entered = True
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        self._stopping.set()
        task, self._task = self._task, None
        if task is None:
            return
        if self._built is None:  # between attempts, or in one that may wait on a timeout
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    def _finish_attempt(self) -> None:
        done, self._attempt = self._attempt, asyncio.get_running_loop().create_future()
        if done is not None and not done.done():
            done.set_result(None)

    async def _supervise(self) -> None:
        delay, longest = self._retry_seconds
        while not self._stopping.is_set():
            try:
                async with self._pipeline.build(self._names) as built:
                    for kb in built.knowledge_bases.values():
                        await kb.vector_store.preload()
                    self._use(built)
                    self._finish_attempt()
                    await self._stopping.wait()
                    self._built = self._tool = None
                    return
            except Exception as exc:
                self._client_error = client_failure(exc)
                if not is_transient(exc):
                    self._fatal = exc
                    self._error = describe_failure(exc)
                    if self._entered:  # else __aenter__ raises it
                        logger.error("cannot serve: %s", self._error)
                    self._finish_attempt()
                    return
                if self._error != describe_failure(exc):
                    logger.warning(
                        "not ready; trying again in the background: %s", describe_failure(exc)
                    )
                self._error = describe_failure(exc)
                self._finish_attempt()
            self._kick.clear()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._kicked_or_stopping(), timeout=delay)
            delay = min(delay * 2, longest)

    async def _kicked_or_stopping(self) -> None:
        waiters = [
            asyncio.ensure_future(self._kick.wait()),
            asyncio.ensure_future(self._stopping.wait()),
        ]
        try:
            await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for waiter in waiters:
                waiter.cancel()

    def _use(self, built: BuiltPipeline) -> None:
        if self._middleware_index is None:
            middleware = RAGMiddleware([built.knowledge_bases[n] for n in self._names])
        else:
            middleware = self._built_middleware(built)
        if middleware.parameters.mode != "agentic":
            middleware = RAGMiddleware(
                middleware.knowledge_bases,
                middleware.parameters.model_copy(update={"mode": "agentic"}),
                rerank_model=middleware.rerank_model,
            )
        retrieve = middleware.retrieve

        async def retrieve_indexed(
            queries: Sequence[Query], knowledge_bases: Sequence[Searchable]
        ) -> list[VectorSearchResult]:
            # The middleware's own retrieval, over the bases whose collection exists:
            # searching would create a missing one, and this server only reads. (A
            # pipeline's bases are all local: only Python code makes a remote one.)
            present = [
                kb
                for kb in knowledge_bases
                if isinstance(kb, KnowledgeBase) and await self._collection_present(kb)
            ]
            return await retrieve(queries, present) if present else []

        self._tool = SearchKnowledgeTool(middleware.knowledge_bases, retrieve_indexed)
        self._built = built
        if self._error != "not started":
            logger.warning("the knowledge bases are open again")
        self._error = None

    def _built_middleware(self, built: BuiltPipeline) -> RAGMiddleware:
        """The built instance of the chosen ``middlewares:`` entry (built in file order)."""
        kept = [
            index
            for index, middleware in enumerate(self._pipeline.spec.middlewares)
            if set(middleware.knowledge_bases) <= set(self._names)
        ]
        middleware = built.middlewares[kept.index(cast(int, self._middleware_index))]
        if not isinstance(middleware, RAGMiddleware):  # a plugin registered as "rag"
            raise TypeError(f"middleware {type(middleware).__name__} is not a RAGMiddleware")
        return middleware

    async def _open(self) -> BuiltPipeline:
        """The built pipeline; when not built, one more attempt (shared by waiting requests)."""
        if self._built is not None:
            return self._built
        if self._fatal is None and self._attempt is not None and not self._stopping.is_set():
            attempt = self._attempt
            self._kick.set()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(attempt), timeout=self._attempt_timeout)
        if self._built is None:
            raise Unavailable(f"the knowledge bases are not open: {self._client_error}")
        return self._built

    @property
    def pipeline(self) -> Pipeline:
        return self._pipeline

    @property
    def names(self) -> list[str]:
        """The knowledge bases served."""
        return list(self._names)

    async def built(self) -> BuiltPipeline:
        """The built pipeline, once its stores are open; Unavailable until then."""
        return await self._open()

    # -- what clients may ask ----------------------------------------------

    @property
    def tool(self) -> SearchKnowledgeTool:
        """The ``search_knowledge`` tool: the real one once built, its declaration before."""
        return self._tool or self._declared_tool

    def info(self, name: str) -> KnowledgeBaseInfo:
        for info in self.infos:
            if info.name == name:
                return info
        known = ", ".join(info.name for info in self.infos) or "none"
        raise NotFound(f"no knowledge base named {echoed(name)!r} (served: {known})")

    async def knowledge_base(self, name: str) -> KnowledgeBase:
        self.info(name)
        return (await self._open()).knowledge_bases[name]

    async def _collection_present(self, kb: KnowledgeBase, *, ask: bool = False) -> bool:
        """Whether the collection exists (never creating it: this server only reads).

        Once seen, it is taken to stay; ``ask`` asks the store all the same.
        """
        if kb.name in self._present and not ask:
            return True
        try:
            found = await kb.vector_store.collection_dimensions(await kb.live_collection())
            if found is None:
                return False
            await kb.ensure_collection()  # checks the dimensions; creates nothing
        except Exception as exc:
            raise self._failure(exc) from exc
        self._present.add(kb.name)
        return True

    def _failure(self, exc: Exception) -> ServiceError:
        if isinstance(exc, ServiceError):
            return exc
        if is_transient(exc) or isinstance(exc, CollectionMismatchError):
            logger.warning("request failed: %s", describe_failure(exc))
            return Unavailable(client_failure(exc), kind=failure_kind(exc))
        logger.error("request failed", exc_info=exc)
        return ServiceError("internal error; the server's log has the details")

    async def _readiness(self) -> dict[str, Any]:
        built = await self._open()
        report: dict[str, Any] = {}
        for name in self._names:
            kb = built.knowledge_bases[name]
            present = await self._collection_present(kb, ask=True)  # the store answers now
            report[name] = "ready" if present else "empty: not indexed yet"
        return report

    async def _list_documents(self, name: str) -> list[DocumentSummary]:
        kb = await self.knowledge_base(name)
        if not await self._collection_present(kb):
            return []
        try:
            documents = await kb.list_documents()
        except Exception as exc:
            raise self._failure(exc) from exc
        return sorted(documents, key=lambda d: (d.source, d.document_id))

    async def _document_text(self, name: str, document_id: str, *, max_chunks: int) -> str:
        kb = await self.knowledge_base(name)
        if not await self._collection_present(kb):
            raise NotFound(f"{name} has no document {echoed(document_id)!r}")
        try:
            chunks = await kb.list_chunks(document_id, limit=max_chunks)
        except Exception as exc:
            raise self._failure(exc) from exc
        if not chunks:
            raise NotFound(f"{name} has no document {echoed(document_id)!r}")
        parts = [
            c.content.text if isinstance(c.content, TextBlock) else f"<{c.content.media_type}>"
            for c in chunks
        ]
        return "\n\n".join(parts)

    async def _call_tool(self, arguments: dict[str, Any]) -> Blocks:
        await self._open()
        try:
            return await self.tool.call(**arguments)
        except Exception as exc:
            raise self._failure(exc) from exc

    # -- each request within its deadline ------------------------------------------

    async def _bounded(self, what: str, work: Coroutine[Any, Any, T]) -> T:
        """``work`` (the store and model calls of one request, their retries included)
        within the request deadline; past it, Unavailable naming ``what``.

        Work past the deadline is cancelled but not waited for: a client that
        is cancelled may itself wait on the hung store (psycopg sends the
        server a cancel request, with its own connect timeout), and the answer
        must not.
        """
        task = asyncio.ensure_future(work)
        try:
            done, _ = await asyncio.wait({task}, timeout=self._request_timeout)
        except asyncio.CancelledError:
            task.cancel()
            raise
        if not done:
            task.cancel()
            task.add_done_callback(_consume_outcome)
            message = f"{what}: the store did not answer in {self._request_timeout:g} s"
            logger.warning("request failed: %s", message)
            raise Unavailable(message)
        try:
            return task.result()
        except Unavailable as exc:
            raise Unavailable(f"{what}: {exc}", kind=exc.kind or "VectorStoreError") from None

    async def readiness(self) -> dict[str, Any]:
        """Each knowledge base's collection as the store reports it; Unavailable if it cannot."""
        return await self._bounded("readiness", self._readiness())

    async def search(
        self,
        name: str,
        query: str | Sequence[str],
        *,
        top_k: int = 5,
        score_threshold: float | None = None,
        where: dict[str, Any] | None = None,
        explain: bool = False,
        mode: Literal["dense", "lexical", "hybrid"] | None = None,
    ) -> list[VectorSearchResult]:
        """``KnowledgeBase.search`` of one query (or several, searched together); ``where``
        narrows within the base's scope; ``mode`` searches in another retrieval mode than
        the pipeline's."""
        queries = [query] if isinstance(query, str) else list(query)
        self.info(name)
        try:
            flatten_filter(where)
        except ValueError as exc:
            raise BadRequest(str(exc).replace("metadata_filter", "filter")) from None

        async def search() -> list[VectorSearchResult]:
            kb = await self.knowledge_base(name)
            if not await self._collection_present(kb):
                return []
            if mode is not None and mode != kb.retrieval.mode:
                if mode != "dense" and not await self._has_lexical(kb):
                    raise BadRequest(
                        f"{name} was built without a lexical side, which mode {mode!r} needs; "
                        "set its retrieval mode to lexical or hybrid and run the pipeline"
                    )
                kb = kb.with_mode(mode)
            try:
                return await kb.search(
                    queries,
                    top_k=top_k,
                    score_threshold=score_threshold,
                    where=where,
                    explain=explain,
                )
            except Exception as exc:
                raise self._failure(exc) from exc

        return await self._bounded(f"knowledge base {name}", search())

    async def list_documents(self, name: str) -> list[DocumentSummary]:
        """The documents of a knowledge base, by source path."""
        self.info(name)
        return await self._bounded(f"knowledge base {name}", self._list_documents(name))

    async def document_text(self, name: str, document_id: str, *, max_chunks: int) -> str:
        """A document's text chunks in order, as the store holds them (at most ``max_chunks``)."""
        self.info(name)
        text = self._document_text(name, document_id, max_chunks=max_chunks)
        return await self._bounded(f"knowledge base {name}", text)

    async def list_chunks(
        self, name: str, document_id: str, *, offset: int = 0, limit: int = 100
    ) -> list[Chunk]:
        """A page of one document's chunks, in order, with their metadata."""
        self.info(name)

        async def chunks() -> list[Chunk]:
            kb = await self.knowledge_base(name)
            if not await self._collection_present(kb):
                return []
            try:
                return await kb.list_chunks(document_id, offset=offset, limit=limit)
            except Exception as exc:
                raise self._failure(exc) from exc

        return await self._bounded(f"knowledge base {name}", chunks())

    async def status(self, name: str) -> KnowledgeBaseStatus:
        """A knowledge base's counts and what its last run left (:class:`KnowledgeBaseStatus`)."""
        info = self.info(name)
        return await self._bounded(f"knowledge base {name}", self._status(info))

    async def _status(self, info: KnowledgeBaseInfo) -> KnowledgeBaseStatus:
        kb = await self.knowledge_base(info.name)
        mode = kb.retrieval.mode
        if not await self._collection_present(kb):
            return KnowledgeBaseStatus(info.name, info.description, mode, False, False)
        try:
            documents = await kb.list_documents()
            pointer = await kb.read_pointer()
            collection = await kb.live_collection()
            lexical = await self._has_lexical(kb)
        except Exception as exc:
            raise self._failure(exc) from exc
        states = [state(document) for document in documents]
        fingerprint = most_common(states, "fingerprint") or {}
        return KnowledgeBaseStatus(
            info.name,
            info.description,
            mode,
            lexical,
            True,
            documents=len(documents),
            chunks=sum(document.chunk_count for document in documents),
            collection=collection,
            fingerprint=fingerprint,
            at_fingerprint=sum(1 for found in states if found.get("fingerprint") == fingerprint),
            previous=[g.collection for g in pointer.generations[1:]] if pointer else [],
            building=pointer.building.collection if pointer and pointer.building else None,
        )

    async def _has_lexical(self, kb: KnowledgeBase) -> bool:
        store = kb.vector_store
        return store.supports_lexical and await store.has_lexical(await kb.live_collection())

    async def call_tool(self, arguments: dict[str, Any]) -> Blocks:
        """Run ``search_knowledge`` as the agent's toolkit would, after the arguments are checked."""
        return await self._bounded(self.tool.name, self._call_tool(arguments))
