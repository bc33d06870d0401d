"""Embedding caches: vectors kept by what was asked for, so a repeated input costs no call.

Named and shaped as AgentScope's (``EmbeddingCacheBase``, ``FileEmbeddingCache``).
A model given ``embedding_cache=`` looks each input up before calling its
service and stores what the service returns. Unlike AgentScope's, the key is
one input (with the model's class, name and dimensions), not a whole batch:
batches here mix inputs from concurrent calls, so a batch would rarely recur.
"""

from __future__ import annotations

import ast
import asyncio
import hashlib
import json
import logging
import os
import struct
import sys
from abc import ABC, abstractmethod
from array import array
from pathlib import Path
from typing import Any

logger = logging.getLogger("ragflow_config.embedding")

_NPY_MAGIC = b"\x93NUMPY\x01\x00"


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


class FileEmbeddingCache(EmbeddingCacheBase):
    """One ``.npy`` file per identifier in ``cache_dir`` (made absolute now, created on first store).

    The file's name is the SHA-256 of the identifier as JSON; its content a
    2-D float64 array in NumPy's ``.npy`` format (written without NumPy).
    ``max_file_number`` and ``max_cache_size`` (MB) bound the folder: after a
    store the oldest files go first; an entry larger than the whole budget is
    not kept. ``clear`` deletes only ``.npy`` files.
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
        path = self.path_for(identifier)
        return await asyncio.to_thread(_read_npy, path)

    async def remove(self, identifier: dict[str, Any]) -> None:
        path = self.path_for(identifier)
        if not path.exists():
            raise FileNotFoundError(f"no cached embeddings at {path}")
        await asyncio.to_thread(path.unlink)

    async def clear(self) -> None:
        await asyncio.to_thread(self._clear)

    def _clear(self) -> None:
        if self.cache_dir.is_dir():
            for path in self.cache_dir.glob("*.npy"):
                path.unlink(missing_ok=True)

    def _store(self, embeddings: list[list[float]], path: Path, overwrite: bool) -> None:
        if path.exists():
            if not path.is_file():
                raise RuntimeError(f"{path} exists and is not a regular file")
            if not overwrite:
                return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        temporary = path.with_suffix(".npy.tmp")
        temporary.write_bytes(_npy_bytes(embeddings))
        temporary.replace(path)  # a reader never sees half a file
        self._enforce_limits(path)

    def _enforce_limits(self, new: Path) -> None:
        limit = None if self.max_cache_size is None else self.max_cache_size * 1024 * 1024
        if limit is not None and new.stat().st_size > limit:
            logger.warning(
                "embedding cache: an entry of %d bytes exceeds the cache size", new.stat().st_size
            )
            new.unlink(missing_ok=True)
        files = sorted(self.cache_dir.glob("*.npy"), key=lambda path: path.stat().st_mtime)
        if self.max_file_number is not None:
            while len(files) > self.max_file_number:
                oldest = files.pop(0)
                logger.info("embedding cache: removing %s (file limit)", oldest.name)
                oldest.unlink(missing_ok=True)
        if limit is not None:
            total = sum(path.stat().st_size for path in files)
            while files and total > limit:
                oldest = files.pop(0)
                total -= oldest.stat().st_size
                logger.info("embedding cache: removing %s (size limit)", oldest.name)
                oldest.unlink(missing_ok=True)


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


def _read_npy(path: Path) -> list[list[float]] | None:
    """The array ``_npy_bytes`` (or ``numpy.save``) wrote, or ``None`` for a missing or other file."""
    try:
        raw = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError):
        return None
    if not raw.startswith(_NPY_MAGIC):
        return None
    (length,) = struct.unpack("<H", raw[8:10])
    header = ast.literal_eval(raw[10 : 10 + length].decode("latin1"))
    codes = {"<f8": "d", "<f4": "f"}
    if header.get("fortran_order") or header.get("descr") not in codes:
        return None
    if len(header.get("shape", ())) != 2:
        return None
    rows, columns = header["shape"]
    data = array(codes[header["descr"]])
    data.frombytes(raw[10 + length :])
    if sys.byteorder == "big":
        data.byteswap()
    values = [float(value) for value in data]
    return [values[row * columns : (row + 1) * columns] for row in range(rows)]
