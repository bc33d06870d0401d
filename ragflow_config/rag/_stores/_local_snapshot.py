"""What a local Qdrant folder answered, kept in the folder for the next process that opens it.

Qdrant's local mode keeps no index on disk: opening a folder unpickles every
point of every collection into the process (a second for 20,000 points, and
twice their size in memory while it lasts). A re-run that changes nothing, or a
``plan``, needs a handful of answers from the store: the pointer, whether the
collection exists, each document's summary. This module keeps those answers in
the folder, under a digest of the local engine's files, so that the next
process that asks the same questions gets them without opening the folder,
for as long as those files hold the same bytes.

The digest is of the files' content, not of their sizes and times: a write
within the file system's time granularity cannot pass for no write, and a
folder copied elsewhere keeps its snapshot. It is taken under the engine's own
lock (``.lock``), so no other process writes while it is read. It is XXH3's
128 bits: it detects change, not tampering (whoever can write the folder can
write the snapshot too), and hashes 80 MB in 13 ms where SHA-256 takes 66.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..._extras import require

logger = logging.getLogger("ragflow_config.stores")

FILE_NAME = "ragflow-snapshot.json"
# Raised whenever what an answer means changes, so an older snapshot is not read.
_FORMAT = 1
# SQLite's side files that hold committed (or, for a hot journal, to-be-undone)
# content; the shared-memory index (-shm) is derived from the log and left out.
_SIDE_FILES = ("-wal", "-journal")
_BLOCK = 1 << 20


def read(folder: Path) -> tuple[str, dict[str, Any]] | None:
    """The digest and the answers kept in ``folder``, if they still describe its files.

    ``None`` when there is no snapshot, it is of another format, the engine's
    files changed since it was written, or another process has the folder open
    (it may be writing).
    """
    try:
        kept = json.loads((folder / FILE_NAME).read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(kept, dict) or kept.get("format") != _FORMAT:
        return None
    try:
        with engine_lock(folder) as held:
            digest = folder_digest(folder) if held else None
    except OSError:  # e.g. a read-only folder: the engine cannot open it either, and says why
        return None
    if digest is None or digest != kept.get("digest"):
        return None
    answers = kept.get("answers")
    return (digest, answers) if isinstance(answers, dict) else None


def write(
    folder: Path, answers: dict[str, Any], earlier: tuple[str, dict[str, Any]] | None = None
) -> None:
    """Keep ``answers`` in ``folder`` under the digest of its files as they are now,
    with the ``earlier`` snapshot's answers (as ``read`` gave them) if the files'
    digest is still that snapshot's: nothing was written since.

    Skipped when another process has opened the folder since (its writes would
    not be in the answers): the snapshot is then the older one, which its digest
    no longer matches.
    """
    try:
        with engine_lock(folder) as held:
            digest = folder_digest(folder) if held else None
            if digest is not None:
                if earlier is not None and earlier[0] == digest:
                    answers = {**earlier[1], **answers}
                content = {"format": _FORMAT, "digest": digest, "answers": answers}
                _replace(folder / FILE_NAME, content)
    except OSError as exc:  # a full disk, say: the next process opens the folder instead
        logger.debug("%s: snapshot not kept (%s)", folder, exc)


def _replace(path: Path, content: dict[str, Any]) -> None:
    """Write ``path`` whole or not at all: a reader never sees half a snapshot."""
    handle, temporary = tempfile.mkstemp(prefix=".snapshot-", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(json.dumps(content))  # dumps, not dump: only dumps encodes in C
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def folder_digest(folder: Path) -> str | None:
    """XXH3-128 of the local engine's files: ``meta.json`` and each collection's SQLite
    file with its non-empty log or journal. ``None`` for a folder without ``meta.json``."""
    try:
        meta = (folder / "meta.json").read_bytes()
        collections = sorted(json.loads(meta)["collections"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    digest = require("xxhash", "qdrant").xxh3_128(meta)
    block = bytearray(_BLOCK)
    for name in collections:
        database = folder / "collection" / name / "storage.sqlite"
        for path in (database, *(Path(f"{database}{side}") for side in _SIDE_FILES)):
            try:
                file = path.open("rb", buffering=0)
            except FileNotFoundError:
                continue
            except OSError:
                return None
            with file:
                size = os.fstat(file.fileno()).st_size
                if path != database and size == 0:
                    continue  # an empty log holds nothing; SQLite creates it on opening
                digest.update(f"\0{name}/{path.name}:{size}\0".encode())
                while length := file.readinto(block):
                    digest.update(memoryview(block)[:length])
    return digest.hexdigest()


@contextlib.contextmanager
def engine_lock(folder: Path) -> Iterator[bool]:
    """Hold the local engine's lock on ``folder`` (the exclusive ``flock`` on ``.lock``
    that qdrant-client takes with portalocker) if no process holds it; yield whether
    it is held. The lock file is opened without being created or truncated."""
    import portalocker

    try:
        file = (folder / ".lock").open("r+")
    except FileNotFoundError:
        yield True  # the engine never opened this folder: nobody can hold it
        return
    with file:
        try:
            portalocker.lock(
                file, portalocker.LockFlags.EXCLUSIVE | portalocker.LockFlags.NON_BLOCKING
            )
        except portalocker.exceptions.LockException:
            yield False
            return
        try:
            yield True
        finally:
            portalocker.unlock(file)
