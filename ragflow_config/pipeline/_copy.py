"""Moving a knowledge base to another store without the model: ``ragflow-config copy --from``.

The source's records are read whole (vectors, chunks with their metadata,
the ``run`` state on chunk 0) and written to the knowledge base's current
store through :meth:`KnowledgeBase.insert_document` with the stored vectors,
so nothing is embedded again; the lexical side is recomputed locally from
the chunk text, as every write does. The copy is what a run would have
written, so ``verify`` finds the new store in sync.

Both sides are :class:`KnowledgeBase` handles (the same name, model,
collection and scope; only the store differs), used through their public
methods alone. A copy that stops part-way converges when started again: a
document the target holds complete in the source's revision is skipped, one
it holds in another revision or incomplete is deleted and written again.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import CollectionMismatchError, RagflowError, defined
from ..rag import Chunk, DocumentSummary, KnowledgeBase, RetrievalSettings, VectorStoreBase
from ._build import build_component
from ._generations import complete
from ._generations import state as _state
from ._registry import Registry
from ._run import fingerprint
from ._spec import VectorStoreBlock

if TYPE_CHECKING:
    from ._pipeline import Pipeline


class CopyRefused(RagflowError):
    """A copy stopped before writing anything: the source cannot give this knowledge base's records."""


class CopySourceNotAStore(CopyRefused):
    """``source_store`` names no store of the file, or the knowledge base's own: what is
    wrong is the name asked for, whatever the stores hold (the CLI exits 2 for it)."""


@dataclass
class LeftOut:
    """A source document the copy did not write, and why."""

    document_id: str
    path: str
    reason: str


@dataclass
class CopyReport:
    """What a copy did: documents written, documents the target already held, chunks written."""

    knowledge_base: str
    source_store: str
    collection: str
    copied: int = 0
    replaced: int = 0  # of ``copied``: present in the target in another revision, or incomplete
    skipped: int = 0
    chunks: int = 0
    left_out: list[LeftOut] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "knowledge_base": self.knowledge_base,
            "source_store": self.source_store,
            "collection": self.collection,
            "documents_copied": self.copied,
            "documents_replaced": self.replaced,
            "documents_skipped": self.skipped,
            "chunks_written": self.chunks,
            "left_out": [asdict(item) for item in self.left_out],
        }


async def copy_knowledge_base(pipeline: Pipeline, name: str, source_store: str) -> CopyReport:
    """Copy knowledge base ``name``'s records from the file's store ``source_store`` to its own.

    Raises :class:`CopyRefused`, before writing anything, when the store is
    unknown or is the knowledge base's own, when the source holds nothing in
    the knowledge base's scope, or when its vectors (or lexical side) were
    made by another pipeline than the file's: then only ``run`` can build the
    target.
    """
    spec = pipeline.spec
    kb_spec = next((kb for kb in spec.knowledge_bases if kb.name == name), None)
    if kb_spec is None:
        raise KeyError(
            f"{pipeline.path.name}: no knowledge base named {name!r} "
            f"(defined: {defined(pipeline.knowledge_base_names)})"
        )
    block = spec.vector_stores.get(source_store)
    if block is None:
        raise CopySourceNotAStore(
            f"{pipeline.path.name}: no vector store named {source_store!r} "
            f"(defined: {defined(spec.vector_stores)})"
        )
    own = kb_spec.vector_store
    if own == source_store or (
        isinstance(own, VectorStoreBlock) and own.model_dump() == block.model_dump()
    ):
        raise CopySourceNotAStore(
            f"{name} already uses the store {source_store!r}: copy --from names another "
            "store of the file, the one the knowledge base used before"
        )
    async with pipeline.build([name]) as built:
        plan = built.indexing[name]
        target = plan.knowledge_base
        async with open_vector_store(pipeline.registry, block, built.folder) as store:
            source = KnowledgeBase(
                name=target.name,
                description=target.description,
                embedding_model=target.embedding_model,
                vector_store=store,
                collection=target.collection,
                metadata_filter=target.metadata_filter,
                # Reading needs neither the lexical side (its fingerprint is
                # compared instead, with a message saying so) nor a reranker.
                retrieval=RetrievalSettings(),
            )
            return await copy_documents(source, target, fingerprint(plan), source_store)


@contextlib.asynccontextmanager
async def open_vector_store(
    registry: Registry, block: VectorStoreBlock, folder: Path
) -> AsyncIterator[VectorStoreBase]:
    """A store of the file built and entered as the pipeline builder does, outside any knowledge base."""
    store: VectorStoreBase = build_component(registry, "vector_store", block, folder)
    async with store:
        yield store


async def copy_documents(
    source: KnowledgeBase, target: KnowledgeBase, prints: dict[str, str], source_name: str = ""
) -> CopyReport:
    """Write ``source``'s documents to ``target`` with their stored vectors.

    ``prints`` is the target pipeline's fingerprint (:func:`fingerprint`):
    every source document's must match it in the parts that make what is
    stored beside the text (the embedding, and the lexical side when
    ``target`` has one), or nothing is written.
    """
    report = CopyReport(target.name, source_name, target.collection)
    where = f"store {source_name!r}" if source_name else "the source store"
    documents = await _source_documents(source, where)
    parts = ["embedding", "lexical"] if target.retrieval.lexical else ["embedding"]
    complete: list[tuple[DocumentSummary, dict[str, Any]]] = []
    differing: dict[str, int] = {}
    for summary in documents:
        state = _state(summary)
        if "content_hash" not in state:
            reason = (
                "no ragflow state: written outside `run`, so what made its vectors is unknown"
                if not state
                else "chunk 0 is missing in the source: a write was interrupted"
            )
            report.left_out.append(LeftOut(summary.document_id, summary.source, reason))
            continue
        if state.get("chunks") != summary.chunk_count:
            reason = (
                f"the source holds {summary.chunk_count} chunks of it, "
                f"its state says {state.get('chunks')}"
            )
            report.left_out.append(LeftOut(summary.document_id, state.get("path", ""), reason))
            continue
        stored = state.get("fingerprint") or {}
        for part in parts:
            if stored.get(part) != prints[part]:
                differing[part] = differing.get(part, 0) + 1
        complete.append((summary, state))
    if differing:
        named = ", ".join(
            f"{part} ({count} of {len(complete)} documents)"
            for part, count in sorted(differing.items())
        )
        raise CopyRefused(
            f"{target.name}: the records in {where} were built by another pipeline than "
            f"this file's; what differs: {named}. Their vectors are not what this file's "
            f"pipeline would store: use `ragflow-config run` to index {target.name} instead"
        )

    held = {s.document_id: s for s in await target.list_documents()}
    for summary, state in complete:
        present = held.get(summary.document_id)
        if present is not None and _holds(present, state["revision"]):
            report.skipped += 1
            continue
        records = await source.document_vectors(summary.document_id)
        records.sort(key=lambda record: record[0].chunk_index)
        problem = _incomplete(records, state)
        if problem:  # changed since it was listed: a run is writing the source
            report.left_out.append(LeftOut(summary.document_id, state.get("path", ""), problem))
            continue
        if present is not None:
            await target.delete_document(summary.document_id)
            report.replaced += 1
        await target.insert_document(
            [chunk for chunk, _ in records],
            document_id=summary.document_id,
            embeddings=[vector for _, vector in records],
        )
        report.copied += 1
        report.chunks += len(records)
    return report


async def _source_documents(source: KnowledgeBase, where: str) -> list[DocumentSummary]:
    """The source's documents in scope; refused when its collection is absent, empty or of
    other dimensions.

    Checked on the store before the handle is first used: a handle creates a
    missing collection, and refuses one of other dimensions with advice
    (``reset``) that does not fit a copy.
    """
    # The collection the source's pointer says is live for this model (the
    # collection's own name before any rebuild); then the handle's public methods.
    try:
        collection = await source.live_collection()
    except CollectionMismatchError as exc:
        raise CopyRefused(f"{where}: {exc}") from exc
    source = source.pinned(collection)
    dimensions = await source.vector_store.collection_dimensions(collection)
    if dimensions is None:
        raise CopyRefused(f"{where} has no collection {collection!r}: nothing to copy")
    model = source.embedding_model
    if dimensions != model.dimensions:
        raise CopyRefused(
            f"{source.name}: collection {collection!r} in {where} holds {dimensions}-"
            f"dimensional vectors, but this file's embedding ({model.model}) makes "
            f"{model.dimensions}-dimensional ones: the embedding differs. Use "
            f"`ragflow-config run` to index {source.name} instead"
        )
    documents = await source.list_documents()
    if not documents:
        scope = " within its metadata_filter" if source.metadata_filter else ""
        raise CopyRefused(
            f"collection {collection!r} in {where} holds no document of "
            f"{source.name}{scope}: nothing to copy"
        )
    return sorted(documents, key=lambda summary: summary.document_id)


def _holds(summary: DocumentSummary, revision: str) -> bool:
    """Whether the target holds a document complete in ``revision``."""
    return complete(summary) and _state(summary).get("revision") == revision


def _incomplete(records: list[tuple[Chunk, list[float]]], state: dict[str, Any]) -> str | None:
    """Why a document's records read from the source are not one whole version, or None."""
    indexes = [chunk.chunk_index for chunk, _ in records]
    if indexes != list(range(state["chunks"])):
        return (
            f"the source holds {len(indexes)} chunks of it, not the {state['chunks']} "
            "numbered from 0 that its state records"
        )
    if any(_state(chunk).get("revision") != state["revision"] for chunk, _ in records):
        return "the source holds chunks of another revision: a write is under way there"
    return None
