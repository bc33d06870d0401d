"""Embedding caches: vectors kept by what was asked for, so a repeated input costs no call.

Named and shaped as AgentScope's (``EmbeddingCacheBase``, ``FileEmbeddingCache``).
A model given ``embedding_cache=`` looks each input up before calling its
service and stores what the service returns. Unlike AgentScope's, the key is
one input (with the model's class, name, dimensions and the settings that
shape its vectors), not a whole batch: batches here mix inputs from
concurrent calls, so a batch would rarely recur.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import json
import logging
import os
import re
import secrets
import stat
import struct
import sys
import time
from abc import ABC, abstractmethod
from array import array
from pathlib import Path
from typing import Any

logger = logging.getLogger("ragflow_config.embedding")

_NPY_MAGIC = b"\x93NUMPY\x01\x00"
_CHECKSUM_BYTES = 16
# Only files named as entries are ever evicted: a cache pointed at a folder
# that holds other .npy files must not delete them.
_ENTRY_NAME = re.compile(r"[0-9a-f]{64}\.npy")
_TEMPORARY_SUFFIX = ".npy.tmp"
_SHAPE = re.compile(rb"'shape': \((\d+), (\d+)\)")
# A temporary file this old was left by a writer that died before renaming it.
_ABANDONED_SECONDS = 3600.0
# A limited cache is checked once per process before its first store, then
# after every sixteenth of a limit stored by that process, trimming the folder
# to fifteen sixteenths: one writer never exceeds a limit, and a check, which
# lists the folder, costs a sixteenth of a limit's stores, not one per store.
_CHECK_EVERY = 16
_stored_since_check: dict[Path, tuple[int, int]] = {}  # cache_dir -> (entries, bytes), this process


class EmbeddingCacheBase(ABC):
    """Where a model keeps vectors, by an identifier (a JSON-serialisable dict)."""

    @abstractmethod
    async def store(
        self,
        embeddings: list[list[float]],
        identifier: dict[str, Any],
        overwrite: bool = False,
        **kwargs: Any,
    ) -> None:
        """Keep ``embeddings`` under ``identifier``; an existing entry stays unless ``overwrite``."""

    @abstractmethod
    async def retrieve(self, identifier: dict[str, Any]) -> list[list[float]] | None:
        """The vectors kept under ``identifier``, or ``None``."""

    @abstractmethod
    async def remove(self, identifier: dict[str, Any]) -> None:
        """Forget ``identifier``; ``FileNotFoundError`` if nothing is kept under it."""

    @abstractmethod
    async def clear(self) -> None:
        """Forget everything."""

    async def retrieve_many(
        self, identifiers: list[dict[str, Any]]
    ) -> list[list[list[float]] | None]:
        """``retrieve`` of each identifier, in order; a cache may answer them together."""
        return list(await asyncio.gather(*(self.retrieve(key) for key in identifiers)))

    async def store_many(self, entries: list[tuple[list[list[float]], dict[str, Any]]]) -> None:
        """``store`` of each ``(embeddings, identifier)``; a cache may write them together."""
        await asyncio.gather(*(self.store(embeddings, key) for embeddings, key in entries))


class FileEmbeddingCache(EmbeddingCacheBase):
    """One ``.npy`` file per identifier in ``cache_dir`` (made absolute now, created on first store).

    The file's name is the SHA-256 of the identifier as JSON; its content a
    2-D float64 array in NumPy's ``.npy`` format (written without NumPy; ``numpy.load``
    reads it), then a 16-byte BLAKE2b checksum of that array keyed by the name.
    A file is written whole under a temporary name, then renamed: readers
    never see half of one, and processes sharing the folder may write the
    same entry at once. A file whose checksum does not match (torn by a
    crash, damaged, copied under another entry's name, written by another
    program) is a miss and is deleted, so the fresh vector replaces it.

    ``max_file_number`` and ``max_cache_size`` (MB) bound the folder, the
    least recently used entries (by modification time, which a hit renews)
    going first; an entry larger than the whole size budget is not kept. A
    process checks the folder before its first store, then after each
    sixteenth of a limit it has stored, trimming it to fifteen sixteenths:
    ``P`` processes writing at once can exceed a limit by ``P - 1``
    sixteenths of it, until their next check. ``clear`` deletes the entries.
    """

    def __init__(
        self,
        cache_dir: str | os.PathLike[str] = "./.cache/embeddings",
        max_file_number: int | None = None,
        max_cache_size: float | None = None,
    ) -> None:
        self.cache_dir = Path(cache_dir).absolute()
        self.max_file_number = max_file_number
        self.max_cache_size = max_cache_size

    def path_for(self, identifier: dict[str, Any]) -> Path:
        key = json.dumps(identifier, ensure_ascii=False)
        return self.cache_dir / f"{hashlib.sha256(key.encode('utf-8')).hexdigest()}.npy"

    async def store(
        self,
        embeddings: list[list[float]],
        identifier: dict[str, Any],
        overwrite: bool = False,
        **kwargs: Any,
    ) -> None:
        await asyncio.to_thread(self._store, embeddings, self.path_for(identifier), overwrite)

    async def retrieve(self, identifier: dict[str, Any]) -> list[list[float]] | None:
        return await asyncio.to_thread(self._retrieve, self.path_for(identifier))

    # One thread hop for a call's inputs, not one each: the hop costs more than a small file.
    async def retrieve_many(
        self, identifiers: list[dict[str, Any]]
    ) -> list[list[list[float]] | None]:
        paths = [self.path_for(identifier) for identifier in identifiers]
        return await asyncio.to_thread(lambda: [self._retrieve(path) for path in paths])

    async def store_many(self, entries: list[tuple[list[list[float]], dict[str, Any]]]) -> None:
        writes = [(embeddings, self.path_for(identifier)) for embeddings, identifier in entries]
        await asyncio.to_thread(self._store_all, writes)

    def _store_all(self, writes: list[tuple[list[list[float]], Path]]) -> None:
        for embeddings, path in writes:
            self._store(embeddings, path, overwrite=False)

    async def remove(self, identifier: dict[str, Any]) -> None:
        path = self.path_for(identifier)
        if not path.exists():
            raise FileNotFoundError(f"no cached embeddings at {path}")
        await asyncio.to_thread(path.unlink)

    async def clear(self) -> None:
        await asyncio.to_thread(self._clear)

    def _clear(self) -> None:
        if self.cache_dir.is_dir():
            for path in self.cache_dir.iterdir():
                if _ENTRY_NAME.fullmatch(path.name):
                    path.unlink(missing_ok=True)

    def _retrieve(self, path: Path) -> list[list[float]] | None:
        try:
            raw = path.read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None
        vectors = _entry_vectors(raw, bytes.fromhex(path.stem))
        if vectors is None:
            logger.warning("embedding cache: %s is damaged; its input is embedded again", path)
            path.unlink(missing_ok=True)
            return None
        with contextlib.suppress(OSError):  # a read-only cache still answers
            os.utime(path)  # recently used: the last to be evicted
        return vectors

    def _store(self, embeddings: list[list[float]], path: Path, overwrite: bool) -> None:
        # One stat, not exists() then is_file(): another process may evict the entry between two.
        try:
            mode: int | None = path.stat().st_mode
        except FileNotFoundError:
            mode = None
        if mode is not None:
            if not stat.S_ISREG(mode):
                raise RuntimeError(f"{path} exists and is not a regular file")
            if not overwrite:
                return
        content = _entry_bytes(embeddings, bytes.fromhex(path.stem))
        limit = None if self.max_cache_size is None else self.max_cache_size * 1024 * 1024
        if self.max_file_number == 0 or (limit is not None and len(content) > limit):
            logger.warning(
                "embedding cache: an entry of %d bytes exceeds the cache's limits", len(content)
            )
            return
        if self._check_due(len(content), limit) and self.cache_dir.is_dir():
            self._trim(limit, len(content))
        # A name of its own per writer: two processes storing one entry never share a file.
        try:
            handle, temporary = self._temporary_file(path)
        except FileNotFoundError:  # the first store: the folder is made now
            self.cache_dir.mkdir(parents=True, exist_ok=True)
            handle, temporary = self._temporary_file(path)
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(content)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def _temporary_file(self, path: Path) -> tuple[int, str]:
        # Not mkstemp: its files are the owner's alone, and a cache folder may be shared
        # between users (CI runners, containers); this one's mode follows the umask.
        temporary = self.cache_dir / f".{path.stem[:16]}-{secrets.token_hex(8)}{_TEMPORARY_SUFFIX}"
        return os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666), str(temporary)

    def _check_due(self, size: int, limit: float | None) -> bool:
        """Count a store by this process; whether the folder is to be checked before it."""
        if self.max_file_number is None and limit is None:
            return False
        entries, stored = _stored_since_check.get(self.cache_dir, (-1, 0))
        entries, stored = entries + 1, stored + size
        due = (
            entries == 0  # this process's first store
            or (self.max_file_number is not None and entries > self.max_file_number // _CHECK_EVERY)
            or (limit is not None and stored > limit / _CHECK_EVERY)
        )
        _stored_since_check[self.cache_dir] = (0, 0) if due else (entries, stored)
        return due

    def _trim(self, limit: float | None, incoming: int) -> None:
        """Evict the least recently used entries, leaving room for the ``incoming`` bytes'
        entry and a sixteenth of each limit."""
        keep_files = (
            None
            if self.max_file_number is None
            else self.max_file_number - self.max_file_number // _CHECK_EVERY - 1
        )
        keep_bytes = None if limit is None else limit - limit / _CHECK_EVERY - incoming
        now = time.time()
        entries: list[tuple[float, str, int]] = []
        with os.scandir(self.cache_dir) as scan:
            for entry in scan:
                try:
                    status = entry.stat()
                except FileNotFoundError:  # another process evicted it meanwhile
                    continue
                if _ENTRY_NAME.fullmatch(entry.name):
                    entries.append((status.st_mtime, entry.path, status.st_size))
                elif (
                    entry.name.endswith(_TEMPORARY_SUFFIX)
                    and now - status.st_mtime > _ABANDONED_SECONDS
                ):
                    Path(entry.path).unlink(missing_ok=True)
        entries.sort()
        files, total = len(entries), sum(size for _, _, size in entries)
        for _, path, size in entries:
            over_files = keep_files is not None and files > keep_files
            over_bytes = keep_bytes is not None and total > keep_bytes
            if not (over_files or over_bytes):
                break
            logger.info("embedding cache: evicting %s", os.path.basename(path))
            Path(path).unlink(missing_ok=True)
            files, total = files - 1, total - size


def _entry_bytes(embeddings: list[list[float]], key: bytes) -> bytes:
    """The array as ``numpy.save`` writes it, then its checksum keyed by ``key`` (the entry's name)."""
    array_bytes = _npy_bytes(embeddings)
    return array_bytes + _checksum(array_bytes, key)


def _checksum(array_bytes: bytes, key: bytes) -> bytes:
    return hashlib.blake2b(array_bytes, digest_size=_CHECKSUM_BYTES, key=key).digest()


def _entry_vectors(raw: bytes, key: bytes) -> list[list[float]] | None:
    """The vectors ``_entry_bytes`` wrote under ``key``; ``None`` for anything else."""
    array_bytes, checksum = raw[:-_CHECKSUM_BYTES], raw[-_CHECKSUM_BYTES:]
    if len(raw) <= _CHECKSUM_BYTES or not hmac.compare_digest(
        _checksum(array_bytes, key), checksum
    ):
        return None
    return _read_npy(array_bytes)


def _npy_bytes(embeddings: list[list[float]]) -> bytes:
    """``numpy.save`` of a 2-D float64 array, byte for byte."""
    rows = len(embeddings)
    columns = len(embeddings[0]) if rows else 0
    if any(len(row) != columns for row in embeddings):
        raise ValueError("cached embeddings must all have the same length")
    header = f"{{'descr': '<f8', 'fortran_order': False, 'shape': ({rows}, {columns}), }}"
    # Pad so that the data starts at a multiple of 64 bytes, ending the header with \n.
    padding = 64 - (len(_NPY_MAGIC) + 2 + len(header) + 1) % 64
    header_bytes = (header + " " * (padding % 64) + "\n").encode("latin1")
    data = array("d", (value for row in embeddings for value in row))
    if sys.byteorder == "big":
        data.byteswap()
    return _NPY_MAGIC + struct.pack("<H", len(header_bytes)) + header_bytes + data.tobytes()


def _read_npy(raw: bytes) -> list[list[float]]:
    """The 2-D float64 array of ``_npy_bytes`` (whose checksum vouched for them)."""
    (length,) = struct.unpack("<H", raw[8:10])
    shape = _SHAPE.search(raw, 10, 10 + length)
    assert shape is not None, "a header _npy_bytes wrote"
    rows, columns = int(shape[1]), int(shape[2])
    data = array("d")
    data.frombytes(raw[10 + length :])
    if sys.byteorder == "big":
        data.byteswap()
    values = data.tolist()
    return [values[row * columns : (row + 1) * columns] for row in range(rows)]
