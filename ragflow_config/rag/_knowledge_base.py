"""The one-stop handle: an embedding model, a vector store and a collection, bound together."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import logging
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, overload

from .._document import Chunk, DocumentSummary, VectorRecord, VectorSearchResult, scope_key
from .._errors import CollectionMismatchError
from .._foreign import converted, refuse_agentscope, refuse_agentscope_callers
from .._observe import observed
from ..embedding._base import EmbeddingInput, EmbeddingModelBase, vectors_digest
from ..embedding._counts import VectorCounts
from ..message import DataBlock, TextBlock
from ._analyzer import Analyzer
from ._explain import ExplainedHit, QueryTrace, explain_hits
from ._retrieval import (
    HitKey,
    RetrievalSettings,
    document_weights,
    fuse,
    group_documents,
    hit_key,
    ordered,
    query_weights,
    rm3_terms,
    rocchio_vector,
)
from ._stores._pointer import Generation, Pointer
from ._stores.base import VectorStoreBase, flatten_filter

if TYPE_CHECKING:  # the rerankers load when a knowledge base names one
    from ..rerankers import RerankerBase

logger = logging.getLogger("ragflow_config.knowledge_base")


class KnowledgeBase:
    """Binds an embedding model, a vector store and a collection.

    ``metadata_filter`` scopes every operation: ``search``, ``list_documents``
    and ``delete_document`` never reach records outside it, and
    ``insert_document`` stamps its fields onto every chunk, overriding what a
    parser wrote. Records are keyed by scope as well as by document id and
    chunk index, so a knowledge base can never replace, delete or hide a
    record of another scope in the same collection, whatever ids it uses.

    The store must already be entered (``async with store:``); the handle
    performs no I/O until first used, then creates the collection sized to
    ``embedding_model.dimensions``.

    ``collection`` names the knowledge base's data. Once a run has rebuilt it
    beside the live collection (a pipeline change that makes other vectors),
    the store's pointer says which physical collection is live; every
    operation reads the pointer once and works on that collection, so a
    search sees one collection whole, never two. A handle whose model did not
    build the live collection reads the latest kept one its model did (a
    server started before the switch goes on answering as it did).

    ``retrieval`` chooses how ``search`` ranks (``_retrieval``): by the
    embedding's similarity (``dense``, the default), by BM25 over analysed
    terms stored beside each vector (``lexical``), or by both fused
    (``hybrid``). The last two need a store with a lexical side.
    """

    #: Chunks embedded and written at a time: the vectors a document holds in memory.
    write_batch: int = 1024

    def __init__(
        self,
        name: str,
        description: str,
        embedding_model: EmbeddingModelBase,
        vector_store: VectorStoreBase,
        collection: str,
        metadata_filter: dict[str, Any] | None = None,
        *,
        retrieval: RetrievalSettings | None = None,
        reranker: RerankerBase | None = None,
    ) -> None:
        flatten_filter(metadata_filter)  # reject unusable filters before any I/O
        for part, ours in ((embedding_model, "embedding"), (vector_store, "rag")):
            refuse_agentscope(
                part,
                "KnowledgeBase",
                f"use ragflow_config.{ours}.{type(part).__name__}, which takes the same "
                "arguments (or agentscope's KnowledgeBase with agentscope's parts)",
            )
        self._retrieval = retrieval or RetrievalSettings()
        if (self._retrieval.rerank is None) != (reranker is None):
            raise ValueError(
                f"knowledge base {name!r}: pass a reranker exactly when retrieval.rerank is set"
            )
        self._reranker = reranker
        if self._retrieval.lexical and not vector_store.supports_lexical:
            raise ValueError(
                f"knowledge base {name!r}: retrieval mode {self._retrieval.mode!r} needs a "
                f"lexical side, which {vector_store.store_name} does not have; use a store "
                "with one (every built-in store has one), or set `retrieval: {mode: dense}`"
            )
        self._analyzer = Analyzer(self._retrieval.analyzer) if self._retrieval.lexical else None
        self.name = name
        self.description = description
        self._embedding_model = embedding_model
        self._vector_store = vector_store
        self._collection = collection
        self._metadata_filter = dict(metadata_filter) if metadata_filter else None
        self._scope = scope_key(self._metadata_filter)
        self._pinned: str | None = None
        self._ready_for: str | None = None  # the physical collection checked last
        self._ready_lock = asyncio.Lock()
        self._warned_not_live: str | None = None
        self._own_digest: str | None = None

    @property
    def embedding_model(self) -> EmbeddingModelBase:
        return self._embedding_model

    @property
    def vector_store(self) -> VectorStoreBase:
        return self._vector_store

    @property
    def collection(self) -> str:
        return self._collection

    @property
    def retrieval(self) -> RetrievalSettings:
        return self._retrieval

    @property
    def metadata_filter(self) -> dict[str, Any] | None:
        return dict(self._metadata_filter) if self._metadata_filter else None

    @property
    def pointer_name(self) -> str:
        """The name of this knowledge base's pointer: its collection, and its scope if any.

        Knowledge bases of different scopes may share a collection; each is
        rebuilt and switched on its own.
        """
        if not self._scope:
            return self._collection
        return f"{self._collection}@{hashlib.sha256(self._scope.encode()).hexdigest()[:16]}"

    def __repr__(self) -> str:
        return f"KnowledgeBase(name={self.name!r}, collection={self.collection!r})"

    def pinned(self, collection: str) -> KnowledgeBase:
        """This knowledge base working on the physical ``collection``, past its pointer:
        how a run fills a collection before switching to it, or works on the live one."""
        twin = copy.copy(self)
        twin._pinned = collection
        twin._ready_for = None
        twin._ready_lock = asyncio.Lock()
        return twin

    def with_mode(self, mode: Literal["dense", "lexical", "hybrid"]) -> KnowledgeBase:
        """This knowledge base searching in another retrieval mode, its other settings kept
        (the retrieval-testing page's toggle). Lexical and hybrid need a collection built
        with a lexical side; a search says so when it has none."""
        if mode == self._retrieval.mode:
            return self
        return KnowledgeBase(
            self.name,
            self.description,
            self._embedding_model,
            self._vector_store,
            self._collection,
            self._metadata_filter,
            retrieval=self._retrieval.model_copy(update={"mode": mode}),
            reranker=self._reranker,
        )

    async def read_pointer(self) -> Pointer | None:
        """The store's pointer for this knowledge base, or ``None`` before its first rebuild."""
        return await self._vector_store.read_pointer(self.pointer_name)

    async def live_collection(self) -> str:
        """The physical collection this handle works on now (see the class's docstring)."""
        return (await self._resolve())[0]

    async def _resolve(self) -> tuple[str, bool]:
        """``(collection, whether a missing one may be created)``: not one a pointer names,
        which is missing only when a switch deleted it after this read it."""
        if self._pinned is not None:
            return self._pinned, True
        pointer = await self.read_pointer()
        if pointer is None:
            return self._collection, True
        generation = self.generation_read(pointer)
        if generation is not pointer.live and self._warned_not_live != pointer.live.collection:
            self._warned_not_live = pointer.live.collection
            logger.warning(
                "%s: the live collection %s was built by another embedding model than "
                "%s; reading %s, the latest kept one built by it, until this handle "
                "is made from the pipeline that built the live one",
                self.name,
                pointer.live.collection,
                self._embedding_model.model,
                generation.collection,
            )
        return generation.collection, False

    def generation_read(self, pointer: Pointer) -> Generation:
        """Of ``pointer``'s collections, the one this handle reads: the newest its own
        model built (the live one, unless the model changed since)."""
        if self._own_digest is None:  # once: the model is the handle's for good
            self._own_digest = vectors_digest(self._embedding_model)
        for generation in pointer.generations:
            if generation.embedding == self._own_digest:
                return generation
        raise CollectionMismatchError(
            f"knowledge base {self.name!r}: its live collection {pointer.live.collection!r} "
            f"was built by another embedding model than "
            f"{type(self._embedding_model).__name__} ({self._embedding_model.model}), and no "
            "kept collection was built by it; run the pipeline, which rebuilds it beside the "
            "live one and switches"
        )

    async def ensure_collection(self) -> str:
        """The physical collection to work on, created on first use; refuse one built
        for other vectors."""
        collection, may_create = await self._resolve()
        if self._ready_for == collection:
            return collection
        async with self._ready_lock:
            if self._ready_for == collection:
                return collection
            expected = self._embedding_model.dimensions
            store = self._vector_store
            found = await store.collection_dimensions(collection)
            if found is None and not may_create:
                raise CollectionMismatchError(
                    f"knowledge base {self.name!r}: collection {collection!r}, which its "
                    "pointer named, is gone (a rebuild switched and deleted it meanwhile); "
                    "try again"
                )
            if found is None:
                if self._retrieval.lexical:
                    await store.create_lexical_collection(collection, expected)
                else:
                    await store.create_collection(collection, expected)
            elif found != expected:
                raise CollectionMismatchError(
                    f"collection {collection!r} holds {found}-dimensional vectors, but "
                    f"{type(self._embedding_model).__name__} ({self._embedding_model.model}) "
                    f"makes {expected}-dimensional ones; use another collection, or start "
                    f"over with `ragflow-config reset <pipeline file> {self.name}` "
                    "(KnowledgeBase.clear() in Python)"
                )
            elif self._retrieval.lexical and not await store.has_lexical(collection):
                raise CollectionMismatchError(
                    f"collection {collection!r} was built without a lexical side, which "
                    f"retrieval mode {self._retrieval.mode!r} needs; use another collection, or "
                    f"start over with `ragflow-config reset <pipeline file> {self.name}` "
                    "(KnowledgeBase.clear() in Python)"
                )
            self._ready_for = collection
            return collection

    async def insert_document(
        self,
        chunks: list[Chunk],
        document_id: str | None = None,
        document_metadata: dict[str, Any] | None = None,
        *,
        embeddings: Sequence[list[float]] | None = None,
        reuse: Mapping[str, list[float]] | None = None,
        counts: VectorCounts | None = None,
    ) -> str:
        """Embed ``chunks`` and store them as one document; return its id.

        Metadata precedence: the knowledge base's ``metadata_filter`` beats the
        chunk's own metadata, which beats ``document_metadata``. Chunks a
        text-only model cannot embed (``DataBlock``s) are skipped with a warning
        that names them.

        A document is embedded and written ``write_batch`` chunks at a time,
        so a huge one needs memory for one batch of vectors, not all of them;
        one of at most ``write_batch`` chunks is embedded whole before any
        write. A failure after the first write removes the document, so it
        leaves no partial document; one before it leaves the store as it was.

        Records are written last chunk first, so chunk 0 appears only once every
        other chunk is stored: a document whose chunk 0 carries a given version
        is complete in that version. Re-inserting an existing ``document_id``
        overwrites its chunks in place; a search meanwhile finds each position
        once, in the old or the new version, never the document missing.

        ``embeddings``, when given, are this knowledge base's model's vectors
        for the embeddable chunks, in order, made elsewhere (a runner embeds
        in its parser processes); they are checked, not recomputed.

        ``reuse`` maps chunk texts to vectors this knowledge base's model made
        for them before (an update reads them from the document's stored
        version): a text chunk found in it takes that vector, and only the
        others go to the model.

        ``counts``, when given, adds where the vectors this call made came from:
        the model, ``reuse``, the model's embedding cache (not ``embeddings``,
        which the caller made).
        """
        document_id = document_id or uuid.uuid4().hex
        chunks = [converted(chunk, Chunk) for chunk in chunks]  # AgentScope's convert losslessly
        prepared = self._prepare(chunks, document_metadata or {})
        if not prepared:
            return document_id
        # Made once the first vectors are in hand: a model that fails (a hosted one
        # without its key) must not leave an empty collection behind.
        collection: str | None = None
        if embeddings is not None:
            self._check_vectors(embeddings, len(prepared))
        # Last chunk first, so chunk 0 lands in the last batch.
        positions = range(len(prepared) - 1, -1, -1)
        batches = [
            positions[i : i + self.write_batch] for i in range(0, len(positions), self.write_batch)
        ]
        writing = False  # until the first write, a failure leaves the store as it was
        try:
            for batch in batches:
                batch_chunks = [prepared[i] for i in batch]
                if embeddings is None:
                    vectors = await self._embed(batch_chunks, reuse or {}, counts)
                else:
                    vectors = [embeddings[i] for i in batch]
                if collection is None:
                    collection = await self.ensure_collection()
                # Chunks were validated when made and vectors checked above; validating
                # every float again cost more than the rest of the bookkeeping.
                records = [
                    VectorRecord.model_construct(
                        vector=vector,
                        document_id=document_id,
                        chunk=chunk,
                        scope=self._scope,
                        terms=self._document_terms(chunk),
                    )
                    for vector, chunk in zip(vectors, batch_chunks, strict=True)
                ]
                writing = True
                with observed("store.write", knowledge_base=self.name):
                    await self._vector_store.insert(collection, records)
        except BaseException:
            if writing and collection is not None:
                await self._remove_partial(document_id, collection)
            raise
        return document_id

    async def _embed(
        self,
        chunks: list[Chunk],
        reuse: Mapping[str, list[float]],
        counts: VectorCounts | None = None,
    ) -> list[list[float]]:
        """``chunks``' vectors: those in ``reuse`` as they are, the others from the model."""
        vectors: list[list[float] | None] = [
            reuse.get(c.content.text) if isinstance(c.content, TextBlock) else None for c in chunks
        ]
        missing = [i for i, vector in enumerate(vectors) if vector is None]
        if counts is not None:
            counts.reused += len(chunks) - len(missing)
        if missing:
            with observed("embeddings", knowledge_base=self.name):
                response = await self._embedding_model([chunks[i].content for i in missing])
            self._check_vectors(response.embeddings, len(missing))
            if counts is not None:  # an AgentScope model's response has no cache counts
                counts.count(
                    len(response.embeddings),
                    getattr(response, "cache_hits", 0),
                    getattr(response, "cache_misses", 0),
                )
            for i, vector in zip(missing, response.embeddings, strict=True):
                vectors[i] = vector
        made = [vector for vector in vectors if vector is not None]
        self._check_vectors(made, len(chunks))  # a reused vector of other dimensions fails here
        return made

    def _document_terms(self, chunk: Chunk) -> dict[int, float] | None:
        """A chunk's BM25 weights when this knowledge base has a lexical side."""
        if self._analyzer is None:
            return None
        text = chunk.content.text if isinstance(chunk.content, TextBlock) else ""
        counts, length = self._analyzer.term_counts(text)
        return document_weights(counts, length, self._retrieval.bm25)

    def _check_vectors(self, vectors: Sequence[list[float]], expected: int) -> None:
        model = self._embedding_model
        if len(vectors) != expected:
            raise RuntimeError(f"{model.model} gave {len(vectors)} vectors for {expected} chunks")
        if any(len(vector) != model.dimensions for vector in vectors):
            raise RuntimeError(
                f"{model.model} gave a vector of other than {model.dimensions} dimensions"
            )

    def embeddable_chunks(self, chunks: list[Chunk]) -> list[Chunk]:
        """The chunks this knowledge base's model can embed; warns naming the others."""
        can_embed = _embeds(self._embedding_model)
        skipped = [
            f"{c.source}#{c.chunk_index} ({c.content.media_type})"
            for c in chunks
            if isinstance(c.content, DataBlock) and not can_embed(c.content)
        ]
        if skipped:
            logger.warning(
                "%s: skipping %d chunk(s) the text-only model %s cannot embed: %s",
                self.name,
                len(skipped),
                self._embedding_model.model,
                ", ".join(skipped),
            )
        return [c for c in chunks if can_embed(c.content)] if skipped else chunks

    def _prepare(self, chunks: list[Chunk], document_metadata: dict[str, Any]) -> list[Chunk]:
        embeddable = self.embeddable_chunks(chunks)
        total = len(embeddable)
        # Shallow copies: the caller's chunks stay as they were, and stores
        # serialise what they are given, so the content blocks can be shared.
        return [
            chunk.model_copy(
                update={
                    "chunk_index": index,
                    "total_chunks": total,
                    "metadata": _deep_merge(
                        _deep_merge(document_metadata, chunk.metadata),
                        self._metadata_filter or {},
                    ),
                },
            )
            for index, chunk in enumerate(embeddable)
        ]

    async def _remove_partial(self, document_id: str, collection: str) -> None:
        removal = asyncio.ensure_future(self.pinned(collection).delete_document(document_id))
        try:
            await asyncio.shield(removal)  # a cancelled write still removes what it wrote
        except asyncio.CancelledError:
            # ...and the removal ends before this does: a store whose calls run on a thread
            # (Qdrant local, Edge) must not be written to after its run has returned.
            await asyncio.wait([removal])
            if not removal.cancelled() and removal.exception() is not None:
                self._log_partial(document_id, removal.exception())
            raise
        except Exception as exc:
            self._log_partial(document_id, exc)

    def _log_partial(self, document_id: str, exc: BaseException | None) -> None:
        logger.error(
            "%s: could not remove the partly written document %s",
            self.name,
            document_id,
            exc_info=exc,
        )

    @overload
    async def search(
        self,
        queries: Sequence[str | TextBlock | DataBlock],
        top_k: int = 5,
        score_threshold: float | None = None,
        *,
        where: dict[str, Any] | None = None,
        explain: Literal[False] = False,
    ) -> list[VectorSearchResult]: ...

    @overload
    async def search(
        self,
        queries: Sequence[str | TextBlock | DataBlock],
        top_k: int = 5,
        score_threshold: float | None = None,
        *,
        where: dict[str, Any] | None = None,
        explain: Literal[True],
    ) -> list[ExplainedHit]: ...

    @overload
    async def search(
        self,
        queries: Sequence[str | TextBlock | DataBlock],
        top_k: int = 5,
        score_threshold: float | None = None,
        *,
        where: dict[str, Any] | None = None,
        explain: bool,
    ) -> list[VectorSearchResult]: ...

    @refuse_agentscope_callers  # given to AgentScope's RAGMiddleware, it would get our hits
    async def search(
        self,
        queries: Sequence[str | TextBlock | DataBlock],
        top_k: int = 5,
        score_threshold: float | None = None,
        *,
        where: dict[str, Any] | None = None,
        explain: bool = False,
    ) -> list[VectorSearchResult] | list[ExplainedHit]:
        """Search with every query; deduplicate, sort best first, cut to ``top_k``.

        ``DataBlock`` queries are dropped when the model is text-only. All
        queries are embedded in one batch and searched concurrently; a chunk
        found by several queries keeps its best score; hits below
        ``score_threshold`` are dropped. ``where`` narrows the search to
        chunks whose metadata also matches it; it can never widen the scope.

        The score, and so ``score_threshold``, depends on the retrieval mode:
        ``dense``, the store's similarity (cosine by default); ``lexical``,
        the BM25 score (0 and up, unbounded); ``hybrid``, the fused score:
        with ``rrf``, the sum of ``weight / (k + rank)`` (at most
        ``(dense_weight + lexical_weight) / (k + 1)``), with ``weighted``, the
        sum of ``weight x`` each side's min-max normalised score (each side's
        first ``candidates`` hits span 0 to 1, later ones fall below 0). IDF counts
        the knowledge base's scope, not ``where``.

        With ``retrieval.rerank``, the first ``candidates`` hits (retrieved
        as above, ``score_threshold`` applied to their retrieval score) are
        reordered by the reranker and scored by it; the hits after them
        follow in retrieval order with their retrieval scores.

        ``explain=True`` returns :class:`ExplainedHit` objects, the same hits in the
        same order, each carrying a :class:`HitExplain` (``_explain``): what
        each side, the fusion and the reranker made of it. The ranking is
        computed the same way either way; explain only keeps what it saw.
        """
        if isinstance(queries, str):
            raise TypeError("search() takes a list of queries, not a single string")
        queries = [converted(query, TextBlock, DataBlock) for query in queries]
        trace: list[QueryTrace] | None = [] if explain else None
        rerank = self._retrieval.rerank
        reranked = None
        with observed(
            "retrieval", knowledge_base=self.name, mode=self._retrieval.mode, top_k=str(top_k)
        ):
            if rerank is None or self._reranker is None or top_k <= 0:
                hits = await self._retrieve(queries, top_k, score_threshold, where, trace)
            else:
                retrieved = await self._retrieve(
                    queries, max(top_k, rerank.candidates), score_threshold, where, trace
                )
                head, tail = retrieved[: rerank.candidates], retrieved[rerank.candidates :]
                with observed("rerank", knowledge_base=self.name):
                    reordered = await self._reranker.rerank(queries, head, top_k=len(head))
                hits = (reordered + tail)[:top_k]
                reranked = (rerank.reranker, head, reordered)
        if trace is None:
            return hits
        return explain_hits(
            hits,
            trace,
            settings=self._retrieval,
            analyzer=self._analyzer,
            metadata_filter=self._scope_with(where),
            reranked=reranked,
        )

    def _scope_with(self, where: dict[str, Any] | None) -> dict[str, Any] | None:
        """The filter a search runs under: ``where`` within this knowledge base's scope."""
        return _deep_merge(where or {}, self._metadata_filter or {}) or None

    async def _retrieve(
        self,
        queries: Sequence[str | TextBlock | DataBlock],
        top_k: int,
        score_threshold: float | None,
        where: dict[str, Any] | None,
        trace: list[QueryTrace] | None,
    ) -> list[VectorSearchResult]:
        """``search`` without the reranker: each query's ranking in the retrieval mode
        (each side grouped by document and searched again with feedback, as set), fused
        in ``hybrid`` mode, then merged.

        ``trace``, when given, receives each query's rankings for ``explain``.
        """
        settings = self._retrieval
        dense = settings.mode != "lexical"
        if dense:
            usable: list[EmbeddingInput] = list(filter(_embeds(self._embedding_model), queries))
        else:
            usable = [q for q in queries if not isinstance(q, DataBlock)]
        if not usable or top_k <= 0:
            return []
        flatten_filter(where)  # an unusable filter fails before the model is called
        collection = await self.ensure_collection()
        scope = self._scope_with(where)
        hybrid = settings.mode == "hybrid"
        limit = max(top_k, settings.candidates) if hybrid else top_k
        lexical: list[_Side | None] = [None] * len(usable)
        if settings.lexical:
            lexical = list(
                await asyncio.gather(
                    *(self._lexical_side(collection, q, limit, scope) for q in usable)
                )
            )
        dense_sides: list[_Side | None] = [None] * len(usable)
        if dense:
            with observed("embeddings", knowledge_base=self.name):
                response = await self._embedding_model(usable)
            dense_sides = list(
                await asyncio.gather(
                    *(self._dense_side(collection, v, limit, scope) for v in response.embeddings)
                )
            )
        by_document = settings.group_by == "document"
        rankings = []
        for query, d, lex in zip(usable, dense_sides, lexical, strict=True):
            if d is not None and lex is not None:
                ranking = fuse(
                    d.hits,
                    lex.hits,
                    settings.fusion,
                    candidates=settings.candidates,
                    by_document=by_document,
                )
            else:
                ranking = d.hits if d is not None else lex.hits if lex is not None else []
            rankings.append(ranking)
            if trace is not None:
                trace.append(
                    QueryTrace(
                        _query_text(query),
                        ranking=ranking,
                        dense=d.hits if d else None,
                        lexical=lex.hits if lex else None,
                        weights=lex.weights if lex else {},
                        dense_members=d.members if d else None,
                        lexical_members=lex.members if lex else None,
                    )
                )
        # Dense scores come from one similarity, so a store's order of ties stands.
        tie_break = settings.lexical or by_document
        return _best(rankings, top_k, score_threshold, tie_break=tie_break, by_document=by_document)

    def _grouped(
        self, hits: list[VectorSearchResult], limit: int
    ) -> tuple[list[VectorSearchResult], dict[str, list[VectorSearchResult]] | None]:
        """A side's chunk hits as its ranking: ``limit`` documents when grouping by document."""
        settings = self._retrieval
        if settings.group_by != "document":
            return hits, None
        documents, members = group_documents(hits, settings.aggregate)
        return documents[:limit], members

    def _fetched(self, limit: int) -> int:
        """Chunks a side asks the store for to return ``limit`` hits."""
        settings = self._retrieval
        return limit * settings.chunks_per_document if settings.group_by == "document" else limit

    async def _dense_side(
        self, collection: str, vector: list[float], limit: int, scope: dict[str, Any] | None
    ) -> _Side:
        """One query's dense ranking; with Rocchio, the second search's."""
        store = self._vector_store
        fetched = self._fetched(limit)
        with observed("store.search", knowledge_base=self.name, side="dense"):
            found = await store.search(collection, vector, top_k=fetched, metadata_filter=scope)
        hits, members = self._grouped(found, limit)
        feedback = self._retrieval.feedback
        rocchio = feedback.rocchio if feedback else None
        if rocchio is not None and hits:
            top = ordered(hits)[: rocchio.fb_docs]
            vectors = await asyncio.gather(*(self._hit_vector(collection, h, scope) for h in top))
            vector = rocchio_vector(vector, [v for v in vectors if v is not None], rocchio.weight)
            found = await store.search(collection, vector, top_k=fetched, metadata_filter=scope)
            hits, members = self._grouped(found, limit)
        return _Side(hits, members)

    async def _hit_vector(
        self, collection: str, hit: VectorSearchResult, scope: dict[str, Any] | None
    ) -> list[float] | None:
        """The stored vector of a hit's chunk (``None`` if deleted since the search).

        Read from the store, not embedded again: no model call, and the very
        vector that was searched. It reads the document's chunks, a few a document.
        """
        stored = await self._vector_store.document_vectors(collection, hit.document_id, scope)
        return next((v for c, v in stored if c.chunk_index == hit.chunk.chunk_index), None)

    async def _lexical_side(
        self, collection: str, query: EmbeddingInput, limit: int, scope: dict[str, Any] | None
    ) -> _Side:
        """One query's lexical ranking and term weights; with RM3, the second search's."""
        if isinstance(query, DataBlock):
            return _Side([], None)
        analyzer = self._analyzer
        assert analyzer is not None
        store = self._vector_store
        text = query.text if isinstance(query, TextBlock) else query
        counts, _ = analyzer.term_counts(text)
        if not counts:
            return _Side([], None)
        fetched = self._fetched(limit)
        weights = await self._query_weights(collection, counts)
        with observed("store.search", knowledge_base=self.name, side="lexical"):
            found = await store.lexical_search(collection, weights, fetched, scope)
        hits, members = self._grouped(found, limit)
        feedback = self._retrieval.feedback
        rm3 = feedback.rm3 if feedback else None
        if rm3 is not None and hits:
            top = ordered(hits)[: rm3.fb_docs]
            expanded = rm3_terms(
                analyzer.terms(text), [(analyzer.terms(_text(h)), h.score) for h in top], rm3
            )
            terms: dict[int, float] = {}
            for term, weight in expanded.items():
                term_id = analyzer.term_id(term)
                terms[term_id] = terms.get(term_id, 0.0) + weight
            weights = await self._query_weights(collection, terms)
            found = await store.lexical_search(collection, weights, fetched, scope)
            hits, members = self._grouped(found, limit)
        return _Side(hits, members, weights)

    async def _query_weights(
        self, collection: str, counts: Mapping[int, float]
    ) -> dict[int, float]:
        """Query term weights: each term's count (or RM3 weight) times its IDF in scope."""
        total, holding = await self._vector_store.term_counts(
            collection, sorted(counts), self._metadata_filter
        )
        return query_weights(counts, total, holding)

    async def list_documents(self) -> list[DocumentSummary]:
        """One summary per document within this knowledge base's scope."""
        collection = await self.ensure_collection()
        return await self._vector_store.list_documents(
            collection, metadata_filter=self._metadata_filter
        )

    async def list_chunks(
        self, document_id: str, *, offset: int = 0, limit: int = 30
    ) -> list[Chunk]:
        """A page of one document's chunks, by ``chunk_index``, within scope."""
        collection = await self.ensure_collection()
        return await self._vector_store.list_chunks(
            collection,
            document_id,
            offset=offset,
            limit=limit,
            metadata_filter=self._metadata_filter,
        )

    async def document_vectors(
        self, document_id: str, *, where: dict[str, Any] | None = None
    ) -> list[tuple[Chunk, list[float]]]:
        """A document's stored chunks with their vectors, within scope (and ``where``)."""
        collection = await self.ensure_collection()
        scope = _deep_merge(where or {}, self._metadata_filter or {})
        return await self._vector_store.document_vectors(
            collection, document_id, metadata_filter=scope or None
        )

    async def delete_document(
        self, document_id: str, *, where: dict[str, Any] | None = None
    ) -> None:
        """Remove every chunk of ``document_id`` within this knowledge base's scope.

        ``where`` narrows the deletion to chunks whose metadata also matches it
        (used to remove an old version's leftover chunks); it can never widen the scope.
        """
        collection = await self.ensure_collection()
        scope = _deep_merge(where or {}, self._metadata_filter or {})
        await self._vector_store.delete(collection, document_id, metadata_filter=scope or None)

    async def clear(self) -> bool:
        """Delete every document within scope, whatever vectors the collection was built for.

        Every collection the pointer keeps (the live one, the previous ones, a
        rebuild under way) is cleared, and the pointer removed. A collection
        is dropped when nothing is left in it (always, without a
        ``metadata_filter``), so the next write creates it for this knowledge
        base's model: the way out of a ``CollectionMismatchError``. Returns
        whether every collection was dropped.
        """
        self._ready_for = None
        if self._pinned is not None:
            return await self._clear_collection(self._pinned)
        pointer = await self.read_pointer()
        if pointer is None:
            return await self._clear_collection(self._collection)
        kept = [*pointer.generations, *pointer.retiring]
        if pointer.building is not None:
            kept.append(pointer.building)
        dropped = [await self._clear_collection(g.collection) for g in kept]
        await self._vector_store.delete_pointer(self.pointer_name)
        return all(dropped)

    async def _clear_collection(self, collection: str) -> bool:
        store = self._vector_store
        if not await store.has_collection(collection):
            return True
        if self._metadata_filter:
            for summary in await store.list_documents(collection, self._metadata_filter):
                await store.delete(collection, summary.document_id, self._metadata_filter)
            if await store.list_documents(collection):
                return False
        await store.delete_collection(collection)
        return True


@dataclass
class _Side:
    """One query's ranking on one side, as ``explain`` needs it."""

    hits: list[VectorSearchResult]
    members: dict[str, list[VectorSearchResult]] | None
    """With ``group_by: document``, each document's chunks the side found."""
    weights: dict[int, float] = field(default_factory=dict)
    """The lexical side's query term weights, by term id."""


def _best(
    per_query: Sequence[Sequence[VectorSearchResult]],
    top_k: int,
    score_threshold: float | None,
    *,
    tie_break: bool = False,
    by_document: bool = False,
) -> list[VectorSearchResult]:
    """Every query's hits as one ranking: each chunk (or document) at its best score,
    ``top_k`` of them.

    ``tie_break`` orders equal scores by document id and chunk index, so that
    stores returning ties in different orders still give one ranking.
    """
    best: dict[HitKey, VectorSearchResult] = {}
    for hits in per_query:
        for hit in hits:
            if score_threshold is not None and hit.score < score_threshold:
                continue
            key = hit_key(hit, by_document)
            if key not in best or hit.score > best[key].score:
                best[key] = hit
    if tie_break:
        return ordered(list(best.values()))[:top_k]
    return sorted(best.values(), key=lambda hit: hit.score, reverse=True)[:top_k]


def _text(hit: VectorSearchResult) -> str:
    content = hit.chunk.content
    return content.text if isinstance(content, TextBlock) else ""


def _query_text(query: EmbeddingInput) -> str:
    """A query as an explain names it."""
    if isinstance(query, DataBlock):
        return f"<{query.media_type} data>"
    return query.text if isinstance(query, TextBlock) else query


def _deep_merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def _embeds(model: EmbeddingModelBase) -> Callable[[EmbeddingInput], bool]:
    """Whether ``model`` takes an input: text always, a ``DataBlock`` only if multimodal.

    Read from ``supports_multimodal`` alone, so a model that does not derive
    from :class:`EmbeddingModelBase` (AgentScope code passes its own) works too.
    """
    multimodal = bool(getattr(model, "supports_multimodal", False))
    return lambda item: multimodal or not isinstance(item, DataBlock)
