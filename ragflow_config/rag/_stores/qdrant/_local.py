"""The local engine's folder: its SQLite files and journal, what opening it costs, and
its payloads read in place.

qdrant-client's local mode offers no settings for these, so the functions here
reach its private ``collections[...]`` objects; a client laid out otherwise is
left as it is (and the store's tests fail).
"""

from __future__ import annotations

import errno
import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ...._errors import VectorStoreError
from .. import _local_snapshot
from ..base import creatable, disk_failure, in_use

logger = logging.getLogger("ragflow_config.stores")

# Opening a local folder that takes longer than this gets a warning naming the stores
# that avoid it (about 20,000 points of 384 dimensions on a 2-core machine).
_SLOW_LOCAL_OPEN_SECONDS = 1.0
# A collection past this many points gets a warning, once a process, naming the store to
# move to: the local engine is made for tests and small data (bench/scale.py).
_MOVE_PAST_POINTS = 20_000
_told_to_move: set[tuple[str, str]] = set()
# SQLite's messages for the file-system failures it reports, as errnos.
_SQLITE_ERRNO = {
    "database or disk is full": errno.ENOSPC,
    "attempt to write a readonly database": errno.EROFS,
    "unable to open database file": errno.ENOENT,
    "disk I/O error": errno.EIO,
}


def local_failure(store_name: str, path: str, exc: OSError | sqlite3.Error) -> VectorStoreError:
    """The local engine's failure to write its folder or SQLite files, and what to do."""
    code = next((code for text, code in _SQLITE_ERRNO.items() if text in str(exc)), None)
    return disk_failure(store_name, path, exc, code)


def set_journal(store_name: str, path: str, client: Any, write_ahead_log: bool) -> None:
    """Apply ``local_write_ahead_log`` to every collection file the local engine has open."""
    if write_ahead_log:
        pragmas = ("PRAGMA journal_mode=WAL", "PRAGMA synchronous=NORMAL")
    else:  # the journal mode is stored in the file: undo an earlier WAL
        pragmas = ("PRAGMA journal_mode=DELETE", "PRAGMA synchronous=FULL")
    for collection in getattr(client._client, "collections", {}).values():
        connection = getattr(getattr(collection, "storage", None), "storage", None)
        if isinstance(connection, sqlite3.Connection):
            try:
                for pragma in pragmas:
                    connection.execute(pragma)
            except sqlite3.Error as exc:
                raise local_failure(store_name, path, exc) from exc


def report_load(store_name: str, client: Any, seconds: float) -> None:
    """Say what opening a local folder cost: qdrant-client's local mode reads every
    point of every collection in it into this process, for one search as for a run."""
    collections = getattr(client._client, "collections", {})
    points = sum(len(getattr(collection, "ids", ())) for collection in collections.values())
    logger.info(
        "%s: loaded %d points of %d collection(s) in %.2f s",
        store_name,
        points,
        len(collections),
        seconds,
    )
    if seconds >= _SLOW_LOCAL_OPEN_SECONDS:
        logger.warning(
            "%s: opening it read all %d points of its %d collection(s) into memory "
            "(%.1f s): Qdrant's local mode keeps no index on disk. `ragflow-config serve` "
            "loads them once for every search; Qdrant Edge (`qdrant_edge`), a Qdrant server "
            "(`url`), pgvector or Milvus Lite read only what a query needs",
            store_name,
            points,
            len(collections),
            seconds,
        )
    for name, collection in collections.items():
        held = len(getattr(collection, "ids", ()))
        if held > _MOVE_PAST_POINTS and (store_name, name) not in _told_to_move:
            _told_to_move.add((store_name, name))
            logger.warning(
                "%s: collection %s holds %d points, past the %d Qdrant's local mode is made "
                "for: every process that opens it loads them all, and every search compares "
                "every vector in Python. Move it to Qdrant Edge, the embedded default: add a "
                "`qdrant_edge` store to the pipeline file, point the knowledge base at it, and "
                "`ragflow-config copy FILE KB --from OLD_STORE` copies its vectors there "
                "without embedding them again",
                store_name,
                name,
                held,
                _MOVE_PAST_POINTS,
            )


def probe_folder(store_name: str, path: Path) -> str:
    """Whether the folder would open. The local engine writes on opening (its folder,
    meta.json, .lock, the journal mode): what it would read is checked instead."""
    if not path.exists():
        return creatable(store_name, path)
    if not path.is_dir():
        raise VectorStoreError(store_name, f"{path} is a file; a local Qdrant store is a folder")
    meta = path / "meta.json"
    if not meta.exists():
        return creatable(store_name, meta)  # an empty folder: a run makes the store
    try:
        collections = json.loads(meta.read_text(encoding="utf-8"))["collections"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise VectorStoreError(store_name, f"{meta} is not a local Qdrant store's ({exc})") from exc
    with _local_snapshot.engine_lock(path) as free:
        if not free:
            raise in_use(store_name, path)
    return f"{path} opens ({len(collections)} collection(s)), not in use"


def payloads_in_place(client: Any, collection: str) -> Iterator[dict[str, Any]] | None:
    """The payloads of ``collection``'s points where the local engine keeps them, read
    in place; ``None`` for a client laid out otherwise."""
    engine = getattr(client, "_client", None)
    found = getattr(engine, "collections", {}).get(collection)
    payloads = getattr(found, "payload", None)
    ids = getattr(found, "ids", None)
    deleted = getattr(found, "deleted", None)
    if not isinstance(payloads, list) or not isinstance(ids, dict) or deleted is None:
        return None
    return (payloads[index] for index in ids.values() if not deleted[index])
