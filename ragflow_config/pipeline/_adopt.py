"""Documents no run wrote: found in a knowledge base's collection and scope, and adopted.

A document whose chunk 0 carries no run state (``metadata["ragflow"]``) was
written by someone else: AgentScope's ``KnowledgeBase`` over the same
collection, or this library's own API. A run would index its file again
beside it, under the run's own document id, and every search would then
find the passage twice. So a run reports such documents as *foreign*, and
stops when one of them is a source file's, unless it may adopt them.

A foreign document is matched to a source file by what it carries: a
content hash in its metadata (``content_hash`` or ``sha256``), else its
source (the name the parser was given, or the ``filename`` AgentScope's
service records) equal to the file's path in its source folder, or to its
file name when only one file has that name. Adopting moves the document to
the run's id: its chunks and vectors are copied, marked as made for the
file's current version when the knowledge base's model gives the same
vector for its first chunk (so the run that follows re-embeds only chunks
whose text differs), and the foreign document is deleted. Its copy then
counts as an interrupted write, which the run completes with its own state.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from ..message import TextBlock
from ..rag import DocumentSummary, KnowledgeBase
from ..sources import SourceFile, content_hash, document_id
from ._generations import STATE_KEY
from ._generations import state as _state

_HASH_KEYS = ("content_hash", "sha256")
# Cosine above which the model's vector for a stored chunk is taken as the stored one.
_SAME_VECTOR = 0.9999


@dataclass
class Foreign:
    """One document no run wrote, and the source file it belongs to, if any."""

    summary: DocumentSummary
    file: SourceFile | None

    @property
    def path(self) -> str:
        return self.file.relative if self.file is not None else self.summary.source


@dataclass
class Adoption:
    """What a run found and did about foreign documents in one knowledge base."""

    found: list[Foreign] = field(default_factory=list)
    # The run's document id of each adopted file, with what to report for it.
    adopted: dict[str, str] = field(default_factory=dict)

    @property
    def matched(self) -> list[Foreign]:
        return [foreign for foreign in self.found if foreign.file is not None]

    def refusal(self, kb_name: str, collection: str) -> str:
        """Why a run that may not adopt stops, and how to go on."""
        first = self.matched[0]
        return (
            f"{kb_name}: collection {collection} holds {len(self.matched)} document(s) of this "
            f"knowledge base's files that no run wrote (such as {first.path!r}, document "
            f"{first.summary.document_id}, written by AgentScope's KnowledgeBase or "
            "ragflow_config's API); indexing their files would store them twice. Run "
            "`ragflow-config run --adopt` to take them over (their vectors are kept where "
            "the model gives the same), or delete them with `ragflow-config delete`"
        )


def find_foreign(
    kb_name: str, documents: Iterable[DocumentSummary], files: list[SourceFile]
) -> list[Foreign]:
    """The documents without run state, each with the source file it matches, if one."""
    stateless = [s for s in documents if not _state(s)]
    if not stateless:  # every document written by a run: the usual case, decided at once
        return []
    # A document under a run's own id without state is that run's, its write
    # interrupted before chunk 0 (the run repairs it), not someone else's.
    own_ids = {document_id(kb_name, file.origin, file.relative) for file in files}
    unowned = [s for s in stateless if s.document_id not in own_ids]
    if not unowned:
        return []
    names = Counter(PurePosixPath(file.relative).name for file in files)
    by_path: dict[str, SourceFile] = {}
    for file in files:
        by_path.setdefault(file.relative, file)
        if names[PurePosixPath(file.relative).name] == 1:
            by_path.setdefault(PurePosixPath(file.relative).name, file)
    hashes = {_hash_of(summary) for summary in unowned} - {None}
    by_hash = {content_hash(file.read()): file for file in files} if hashes else {}
    found = []
    for summary in unowned:
        digest = _hash_of(summary)
        named = [
            n for n in (summary.source, summary.metadata.get("filename")) if isinstance(n, str)
        ]
        match = by_hash.get(digest) if digest else None
        match = match or next((by_path[n] for n in named if n in by_path), None)
        found.append(Foreign(summary, match))
    # One file, one document: a second foreign document of the same file is left foreign.
    taken: set[str] = set()
    for foreign in found:
        if foreign.file is not None:
            own_id = document_id(kb_name, foreign.file.origin, foreign.file.relative)
            if own_id in taken:
                foreign.file = None
            taken.add(own_id)
    return found


def _hash_of(summary: DocumentSummary) -> str | None:
    value = next((summary.metadata.get(key) for key in _HASH_KEYS if key in summary.metadata), None)
    return value if isinstance(value, str) else None


async def adopt(
    kb: KnowledgeBase, foreign: Foreign, revision_of: Callable[[bytes], str]
) -> tuple[str, str]:
    """Move ``foreign`` to the run's id of its file; its id and what to report for it.

    ``revision_of`` is the run's revision of a file's bytes, which the copied
    chunks carry when their vectors are the model's, so the run reuses them.
    """
    assert foreign.file is not None
    file, old_id = foreign.file, foreign.summary.document_id
    own_id = document_id(kb.name, file.origin, file.relative)
    stored = await kb.document_vectors(old_id)
    stored.sort(key=lambda pair: pair[0].chunk_index)
    reusable = bool(stored) and await _same_model(kb, stored[0])
    if reusable:
        mark = {STATE_KEY: {"revision": revision_of(file.read())}}
        chunks = [
            chunk.model_copy(update={"metadata": {**chunk.metadata, **mark}}) for chunk, _ in stored
        ]
        await kb.insert_document(
            chunks, document_id=own_id, embeddings=[vector for _, vector in stored]
        )
    await kb.delete_document(old_id)
    kept = "its vectors kept where the text is the same" if reusable else "embedded anew"
    return own_id, f"adopted document {old_id}, written outside runs ({kept})"


async def _same_model(kb: KnowledgeBase, pair: tuple[object, list[float]]) -> bool:
    """Whether the knowledge base's model gives ``pair``'s stored vector for its chunk."""
    chunk, stored = pair
    content = getattr(chunk, "content", None)
    if not isinstance(content, TextBlock):
        return False
    [vector] = (await kb.embedding_model([content.text])).embeddings
    dot = sum(a * b for a, b in zip(vector, stored, strict=True))
    norms = math.sqrt(sum(a * a for a in vector)) * math.sqrt(sum(b * b for b in stored))
    return norms > 0 and dot / norms >= _SAME_VECTOR
