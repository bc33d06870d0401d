"""Milvus Lite's server processes: one per file, shared by every store of this process,
and what to tell of a file another process serves or a disk that is full."""

from __future__ import annotations

import fcntl
import os
import shutil
import threading
from collections import Counter
from pathlib import Path

from ...._errors import VectorStoreError
from .._lite_clock import LiteClock
from ..base import creatable, in_use

_SQLITE_HEADER = b"SQLite format 3\0"  # what a Milvus Lite file is
# Less free space than this beside a Milvus Lite file is named as a failure's likely cause.
_LOW_DISK_BYTES = 64 * 1024 * 1024

# Milvus Lite runs one server process per file, shared by every client in this
# process; the last store to leave releases it. Its clock goes with it: a new
# server counts inserted rows from zero.
_lite_users: Counter[str] = Counter()
_lite_clocks: dict[str, LiteClock] = {}
_lite_lock = threading.Lock()


def use(path: str) -> LiteClock:
    """Count one more store on the file ``path``; the clock of its server."""
    with _lite_lock:
        _lite_users[path] += 1
        return _lite_clocks.setdefault(path, LiteClock())


def release(path: str) -> None:
    """Count one store fewer on ``path``; the last one stops its server."""
    with _lite_lock:
        _lite_users[path] -= 1
        if _lite_users[path] > 0:
            return
        del _lite_users[path]
        del _lite_clocks[path]
    from milvus_lite.server_manager import server_manager_instance

    server_manager_instance.release_server(path)


def disk_advice(lite_path: str | None) -> str:
    """Why a Milvus Lite request may have failed, when its disk is (nearly) full.

    Milvus Lite reports a full disk only as a request that timed out
    ("Retry timeout: 30.0s"), so the folder's free space is checked.
    """
    if lite_path is None:
        return ""
    folder = Path(lite_path).parent
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return ""
    if free >= _LOW_DISK_BYTES:
        return ""
    return f"; the disk holding {folder} has {free // 1024} KiB free: free space there"


def probe_file(store_name: str, path: Path) -> str:
    """Whether the file would open. Starting Milvus Lite creates the file, its folder
    and a lock file beside it: what it would open is checked instead."""
    if not path.exists():
        return creatable(store_name, path)
    try:
        with path.open("rb") as file:
            header = file.read(len(_SQLITE_HEADER))
    except OSError as exc:
        raise VectorStoreError(store_name, f"cannot read {path}: {exc}") from exc
    if header != _SQLITE_HEADER:
        raise VectorStoreError(store_name, f"{path} is not a Milvus Lite file; choose another path")
    if lite_in_use(path):
        raise in_use(store_name, path)
    return f"{path} opens, not in use"


def lite_in_use(path: Path) -> bool:
    """Whether another process holds Milvus Lite's lock on ``path``: an fcntl lock on
    ``.NAME.lock`` beside it, which Milvus Lite takes while serving the file.

    Not asked for a file this process serves: fcntl locks belong to a process, and
    closing any descriptor of the lock file would release the process's own lock.
    """
    with _lite_lock:
        if str(path) in _lite_users:
            return False
    try:
        descriptor = os.open(path.parent / f".{path.name}.lock", os.O_WRONLY)
    except OSError:  # no lock file: no server; one that cannot be opened is not ours to judge
        return False
    try:
        fcntl.lockf(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(descriptor)  # releases the lock, if it was taken
    return False
