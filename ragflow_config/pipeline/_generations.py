"""Rebuilds beside the live collection: when a run builds one, how it is checked,
switched to, kept and rolled back.

A run whose pipeline makes other vectors than the live collection holds (a
new model, other dimensions, another chunker or parser setting) does not
re-index in place, where every search would mix two models until it ended.
It fills a new collection beside the live one (named by the collection, the
scope and the fingerprint, so an interrupted rebuild is found and resumed),
checks it, then switches the store's pointer in one atomic write. The
collections it replaced are kept (``keep_previous``) for ``rollback``; older
ones are listed in that same write as retiring, then deleted.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

from .._errors import RagflowError
from ..rag import Chunk, DocumentSummary, KnowledgeBase
from ..rag._stores._pointer import Generation, Pointer

STATE_KEY = "ragflow"


class RollbackRefused(RagflowError):
    """Nothing to roll back to."""


@dataclass
class Rebuild:
    """A rebuild beside the live collection, and how far it got."""

    live: str
    target: str
    changed: list[str]
    chunks_to_embed: int
    switched: bool = False
    blocked: str | None = None  # why the rebuild was not switched to
    waiting: str | None = None  # why the switch is left to a later step (sharded runs)
    kept: bool = False  # the target is a kept collection this pipeline built: switching back
    retired: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def state(stored: DocumentSummary | Chunk) -> dict[str, Any]:
    """The run's state a stored document (its chunk 0) or chunk carries."""
    found = stored.metadata.get(STATE_KEY)
    return found if isinstance(found, dict) else {}


def complete(summary: DocumentSummary) -> bool:
    """Whether a document is stored whole: its chunk 0's state, and as many chunks as it says."""
    found = state(summary)
    return "content_hash" in found and found.get("chunks") == summary.chunk_count


def target_name(kb: KnowledgeBase, prints: dict[str, str]) -> str:
    """The collection a rebuild for ``prints`` fills: the same for every run of that pipeline."""
    key = kb.pointer_name + json.dumps(prints, sort_keys=True)
    return f"{kb.collection}__{hashlib.sha256(key.encode()).hexdigest()[:16]}"


def kept_target(kb: KnowledgeBase, pointer: Pointer | None, prints: dict[str, str]) -> str:
    """The collection a rebuild for ``prints`` fills: a kept one built by the same
    pipeline (a change reverted: it holds those vectors already, the one built before
    pointers included), else a new one named by the fingerprint."""
    for generation in pointer.generations[1:] if pointer is not None else []:
        if generation.fingerprint == prints:
            return generation.collection
    return target_name(kb, prints)


async def rebuild_reasons(kb: KnowledgeBase, live: str, stale_prints: Iterable[str]) -> list[str]:
    """What keeps the live collection from being brought in line in place: [] when nothing."""
    reasons = sorted(stale_prints)
    store = kb.vector_store
    dimensions = await store.collection_dimensions(live)
    if dimensions is None:
        return reasons
    if dimensions != kb.embedding_model.dimensions:
        reasons.append(f"dimensions {dimensions} -> {kb.embedding_model.dimensions}")
    elif kb.retrieval.lexical and not await store.has_lexical(live):
        reasons.append("a lexical side")
    return reasons


def most_common(states: Iterable[dict[str, Any]], key: str) -> dict[str, Any] | None:
    """The mapping most of the given states hold under ``key``; ``None`` when none holds
    one. Ties go to the first in sorted order, so the answer does not hang on listing order."""
    found = Counter(
        json.dumps(found[key], sort_keys=True)
        for found in states
        if isinstance(found.get(key), dict)
    )
    if not found:
        return None
    best = max(found.values())
    chosen: dict[str, Any] = json.loads(min(text for text, n in found.items() if n == best))
    return chosen


def _described(collection: str, documents: Iterable[DocumentSummary]) -> Generation:
    """A collection built before pointers, described by what its documents say built them."""
    fingerprint = most_common((state(s) for s in documents), "fingerprint") or {}
    return Generation(
        collection=collection,
        embedding=fingerprint.get("embedding", ""),
        fingerprint=fingerprint,
    )


async def begin(
    kb: KnowledgeBase,
    pointer: Pointer | None,
    rebuild: Rebuild,
    prints: dict[str, str],
    live_documents: Iterable[DocumentSummary],
) -> Pointer:
    """Record the rebuild under way (adopting a collection built before pointers as the
    live one), and clear an abandoned rebuild for other settings."""
    if pointer is None:
        pointer = Pointer(generations=[_described(kb.collection, live_documents)])
    kept = {g.collection for g in pointer.generations}
    abandoned = pointer.building
    if abandoned is not None and abandoned.collection not in kept | {rebuild.target}:
        await kb.pinned(abandoned.collection).clear()
    building = Generation(
        collection=rebuild.target, embedding=prints["embedding"], fingerprint=prints
    )
    pointer = pointer.model_copy(update={"building": building})
    await kb.vector_store.write_pointer(kb.pointer_name, pointer)
    return pointer


def check(
    target_documents: dict[str, DocumentSummary],
    live_documents: dict[str, DocumentSummary],
    wanted: Iterable[str],
    skipped: set[str],
    prints: dict[str, str],
) -> str | None:
    """Why the rebuilt collection must not go live, or ``None`` when it may.

    Every document in it is whole and built by this pipeline, and every file
    the live collection holds is in it, unless this run found the pipeline now
    skips it (unsupported, empty, too large), or it failed and ``failed_files``
    let it go (``skipped`` then holds it too).
    """
    for summary in target_documents.values():
        where = state(summary).get("path", summary.document_id)
        if not complete(summary):
            return f"{where} is not stored whole"
        if state(summary).get("fingerprint") != prints:
            return f"{where} was built by other settings"
    missing = [
        state(live_documents[doc_id]).get("path", doc_id)
        for doc_id in wanted
        if doc_id in live_documents
        and doc_id not in target_documents
        and doc_id not in skipped
        and complete(live_documents[doc_id])
    ]
    if missing:
        return f"{len(missing)} file(s) the live collection holds are missing, e.g. {missing[0]}"
    return None


@dataclass(frozen=True)
class FailedFiles:
    """Why a rebuild with failed files may not switch: the switch policy for failures.

    A rebuild may switch when the live collection holds none of its failed
    files whole (they failed there too, or are new: switching loses nothing),
    or when they are at most ``max_failed_fraction`` of its files (those the
    live collection holds are then dropped).
    """

    #: The failed files, by document id: their paths.
    failed: dict[str, str]
    files: int
    max_failed_fraction: float

    def refusal(self, live_documents: dict[str, DocumentSummary]) -> str | None:
        """Why the rebuild must not switch, naming the files and the setting; ``None``: it may."""
        held = [path for doc_id, path in self.failed.items() if _held(live_documents, doc_id)]
        if not held:
            return None
        share = len(self.failed) / self.files if self.files else 1.0
        if share <= self.max_failed_fraction:
            return None
        shown = ", ".join(sorted(held)[:_NAMED]) + (", ..." if len(held) > _NAMED else "")
        return (
            f"{len(self.failed)} of {self.files} file(s) failed ({share:.1%}), "
            f"{len(held)} of which the live collection holds ({shown}): switching would drop "
            f"them; fix them, or raise max_failed_fraction (now {self.max_failed_fraction:.0%}) "
            f"to {share:.1%} to switch without them"
        )


_NAMED = 5  # failed files a refusal names


def _held(documents: dict[str, DocumentSummary], doc_id: str) -> bool:
    return doc_id in documents and complete(documents[doc_id])


async def switch(
    kb: KnowledgeBase, rebuild: Rebuild, keep_previous: int, *, empty_live: bool = False
) -> None:
    """Make the rebuilt collection live in one write; delete what ``keep_previous`` lets go.

    ``empty_live``: the live collection holds nothing in scope (a first run that wrote
    nothing made it), so it is no collection to roll back to, and goes too."""
    store = kb.vector_store
    pointer = await kb.read_pointer()
    if pointer is None or pointer.building is None or pointer.building.collection != rebuild.target:
        raise RagflowError(
            f"{kb.name}: the pointer no longer records the rebuild into {rebuild.target} "
            "(another run?); run again"
        )
    others = [g for g in pointer.generations if g.collection != rebuild.target]
    dropped = {pointer.live.collection} if empty_live else set()
    kept = [g for g in others if g.collection not in dropped][:keep_previous]
    switched = Pointer(
        generations=[pointer.building, *kept],
        retiring=[*pointer.retiring, *(g for g in others if g not in kept)],
        yielded_nothing=pointer.yielded_nothing,
    )
    await store.write_pointer(kb.pointer_name, switched)
    rebuild.switched = True
    rebuild.retired = await retire(kb, switched)


async def leave_unswitched(kb: KnowledgeBase, rebuild: Rebuild, note: str) -> None:
    """Record on the pointer why the rebuild under way was not switched to (what `list`
    shows), until a run resumes it."""
    pointer = await kb.read_pointer()
    if pointer is None or pointer.building is None or pointer.building.collection != rebuild.target:
        return  # another run took the pointer over: its own state stands
    building = pointer.building.model_copy(update={"not_switched": note})
    await kb.vector_store.write_pointer(
        kb.pointer_name, pointer.model_copy(update={"building": building})
    )


async def retire(kb: KnowledgeBase, pointer: Pointer) -> list[str]:
    """Delete the collections ``pointer`` lists as retiring (within scope), then the list."""
    if not pointer.retiring:
        return []
    live = {g.collection for g in pointer.generations}
    for generation in pointer.retiring:
        if generation.collection not in live:
            await kb.pinned(generation.collection).clear()
    await kb.vector_store.write_pointer(
        kb.pointer_name, pointer.model_copy(update={"retiring": []})
    )
    return [g.collection for g in pointer.retiring]


async def rollback(kb: KnowledgeBase) -> Pointer:
    """Switch back to the collection the live one replaced; the live one is kept, next."""
    pointer = await kb.read_pointer()
    if pointer is None or len(pointer.generations) < 2:
        raise RollbackRefused(
            f"{kb.name}: no previous collection to roll back to (it is kept from a rebuild "
            "beside the live one, with keep_previous of 1 or more)"
        )
    current, previous, *rest = pointer.generations
    if not await kb.vector_store.has_collection(previous.collection):
        raise RollbackRefused(f"{kb.name}: the previous collection {previous.collection} is gone")
    rolled = pointer.model_copy(update={"generations": [previous, current, *rest]})
    await kb.vector_store.write_pointer(kb.pointer_name, rolled)
    return rolled
