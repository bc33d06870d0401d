"""The folder a Qdrant Edge store keeps: one shard per collection, the pointer
registry, and the lock that gives the folder to one process at a time.

::

    <path>/
      .lock                      held (flock) by the process that has the store open
      collections/<name>/        one Qdrant Edge shard per collection
      ragflow_pointers/<id>.json one file per pointer, replaced whole

A shard admits one process: Qdrant Edge locks its write-ahead log, and the
folder lock makes the refusal come before anything is read, whatever the shard.
A pointer is a small file replaced by ``os.replace``, so a reader sees the old
record or the new one, and reading one loads no shard.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import uuid
from pathlib import Path
from typing import IO, Any

from .._pointer import POINTER_REGISTRY, Pointer

_COLLECTIONS = "collections"
_LOCK = ".lock"
# A collection is a folder: its name must be one on every file system.
_COLLECTION_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$")


class StoreFolder:
    """Paths and small files of one store folder; the shards themselves are the store's."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock: IO[str] | None = None

    # The lock.

    def lock(self) -> bool:
        """Take the folder for this process (creating it); ``False`` if another has it."""
        (self.path / _COLLECTIONS).mkdir(parents=True, exist_ok=True)
        file = (self.path / _LOCK).open("a")
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.close()
            return False
        self._lock = file
        return True

    def unlock(self) -> None:
        if self._lock is not None:
            lock, self._lock = self._lock, None
            lock.close()  # closing the file releases the flock

    def in_use(self) -> bool:
        """Whether another process has the folder, found out without creating anything."""
        try:
            file = (self.path / _LOCK).open("r")
        except FileNotFoundError:
            return False
        with file:
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(file, fcntl.LOCK_UN)
            return False

    # Collections.

    def collection(self, name: str) -> Path:
        if not _COLLECTION_NAME.match(name):
            raise ValueError(
                f"collection name {name!r}: Qdrant Edge keeps a collection as a folder, so "
                "its name is 1-128 letters, digits, '_', '-' or '.', not starting with '.' or '-'"
            )
        return self.path / _COLLECTIONS / name

    def collection_config(self, name: str) -> dict[str, Any] | None:
        """The shard's own configuration (``edge_config.json``), or ``None`` if there is none."""
        try:
            text = (self.collection(name) / "edge_config.json").read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        config: dict[str, Any] = json.loads(text)
        return config

    def collections(self) -> list[str]:
        folder = self.path / _COLLECTIONS
        if not folder.is_dir():
            return []
        return sorted(
            entry.name for entry in folder.iterdir() if (entry / "edge_config.json").exists()
        )

    def staging(self, name: str) -> Path:
        """A fresh folder beside the collections where a new shard is made before it is
        renamed into place: a run killed while creating one leaves no half-made collection."""
        return self.path / _COLLECTIONS / f".new-{name}-{uuid.uuid4().hex[:8]}"

    def remove(self, name: str) -> None:
        """Delete a collection's folder: renamed away first, so it is gone at once."""
        folder = self.collection(name)
        if not folder.exists():
            return
        doomed = self.path / _COLLECTIONS / f".deleted-{name}-{uuid.uuid4().hex[:8]}"
        os.replace(folder, doomed)
        shutil.rmtree(doomed, ignore_errors=True)

    def sweep(self) -> None:
        """Remove what a process killed while creating or deleting a collection left."""
        folder = self.path / _COLLECTIONS
        for entry in folder.glob(".*-*"):
            shutil.rmtree(entry, ignore_errors=True)

    # Pointers.

    def _pointer_file(self, name: str) -> Path:
        digest = hashlib.sha256(name.encode()).hexdigest()[:32]
        return self.path / POINTER_REGISTRY / f"{digest}.json"

    def has_pointers(self) -> bool:
        """Whether the registry exists: a pointer was written here once."""
        return (self.path / POINTER_REGISTRY).is_dir()

    def read_pointer(self, name: str) -> Pointer | None:
        try:
            kept = json.loads(self._pointer_file(name).read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        return Pointer.model_validate(kept["pointer"])

    def write_pointer(self, name: str, pointer: Pointer) -> None:
        target = self._pointer_file(name)
        target.parent.mkdir(exist_ok=True)
        record = {"name": name, "pointer": pointer.model_dump(mode="json")}
        temporary = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}")
        with temporary.open("w", encoding="utf-8") as file:
            json.dump(record, file)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)

    def delete_pointer(self, name: str) -> None:
        self._pointer_file(name).unlink(missing_ok=True)
