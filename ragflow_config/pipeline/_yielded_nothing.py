"""Files that yield nothing to index, remembered so that runs do not parse them again.

A file that fails to parse, holds nothing to index, or holds only what the
model cannot embed stores no document: without a record, every run, plan and
verify finds it new, parses (or OCRs) it again and prints it again. Each is
remembered on the knowledge base's pointer, which the store replaces whole in
one atomic write (as a switch does), under the *revision* it was tried at: its
content hash and the pipeline fingerprint, digested. A run that finds the same
revision reports the remembered outcome and reads no further than the hash; an
edit of the file, a change of the pipeline (a parser setting, OCR turned on) or
``run --retry-failed`` tries it again. A run killed before the write leaves the
previous record, so the next one at worst parses the file again.
"""

from __future__ import annotations

from ..rag import KnowledgeBase
from ..rag._stores._pointer import Generation, Pointer, Remembered

#: The outcomes remembered: what a parse decides, the same every time for the same
#: bytes and pipeline. Not "unreadable" (a permission, a file gone), which reads nothing.
REMEMBERED = ("failed", "empty", "skipped", "unsupported")

# The record travels in the pointer, which a store keeps as one value (Milvus's
# VARCHAR holds 65,535 bytes): beyond this size, files are parsed as before.
_MAX_BYTES = 32 * 1024
_MAX_REASON = 300


def remembered(path: str, revision: str, action: str, reason: str) -> Remembered:
    """What to remember of a file that yielded nothing, its reason cut to a line's length."""
    if len(reason) > _MAX_REASON:
        reason = reason[: _MAX_REASON - 3] + "..."
    return Remembered.model_validate(
        {"path": path, "revision": revision, "action": action, "reason": reason}
    )


def bounded(memory: dict[str, Remembered]) -> dict[str, Remembered]:
    """``memory`` by path, as much of it as the pointer has room for."""
    kept: dict[str, Remembered] = {}
    size = 0
    for doc_id, entry in sorted(memory.items(), key=lambda item: item[1].path):
        size += len(doc_id) + len(entry.model_dump_json())
        if size > _MAX_BYTES:
            break
        kept[doc_id] = entry
    return kept


async def remember(
    kb: KnowledgeBase, live: str, memory: dict[str, Remembered], prints: dict[str, str]
) -> None:
    """Record ``memory`` as the files of ``kb`` that yielded nothing, if it changed.

    A knowledge base without a pointer gets one naming ``live`` as its only collection,
    built by ``prints`` (an in-place run writes by the pipeline's own fingerprint), unless
    the collection does not exist: a pointer must never name a collection that is not.
    """
    memory = bounded(memory)
    pointer = await kb.read_pointer()
    if pointer is None:
        if not memory or not await kb.vector_store.has_collection(live):
            return
        generation = Generation(collection=live, embedding=prints["embedding"], fingerprint=prints)
        pointer = Pointer(generations=[generation])
    elif pointer.yielded_nothing == memory:
        return
    await kb.vector_store.write_pointer(
        kb.pointer_name, pointer.model_copy(update={"yielded_nothing": memory})
    )
