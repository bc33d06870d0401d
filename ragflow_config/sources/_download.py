"""A bounded temporary folder for what a remote source downloads before the run reads it.

A remote file's bytes wait on disk, not in memory, between the moment the source
fetches them (a web page while the site is crawled) and the moment the run reads
them. The folder holds at most ``max_bytes`` in all; it is removed when closed,
when the last file that refers to it is dropped, and at the latest when the
process exits (also when a run fails or is cancelled).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import tempfile
import threading
import weakref
from collections.abc import Iterable
from pathlib import Path


class DownloadArea:
    """A private temporary folder holding downloaded bodies, ``max_bytes`` in all."""

    def __init__(self, max_bytes: int) -> None:
        self.max_bytes = max_bytes
        self.used = 0
        self.path = Path(tempfile.mkdtemp(prefix="ragflow-downloads-"))
        self._lock = threading.Lock()
        self._count = 0
        # Runs on close, on garbage collection and at exit, whichever comes first.
        self._removal = weakref.finalize(self, shutil.rmtree, self.path, ignore_errors=True)

    def store(self, chunks: Iterable[bytes], limit: int) -> Path | None:
        """The chunks written to a file of their own, or None when they run past ``limit``
        bytes (what was written of them is removed).

        Raises OSError (``ENOSPC``) when the area's own bound would be passed.
        """
        with self._lock:
            self._count += 1
            target = self.path / f"{self._count:08d}"
        reserved = 0
        try:
            with open(target, "xb") as file:
                for chunk in chunks:
                    if reserved + len(chunk) > limit:
                        break
                    self._reserve(len(chunk))
                    reserved += len(chunk)
                    file.write(chunk)
                else:
                    return target
        except BaseException:
            self._discard(target, reserved)
            raise
        self._discard(target, reserved)  # past its limit
        return None

    def close(self) -> None:
        """Remove the folder and all it holds."""
        self._removal()

    @property
    def closed(self) -> bool:
        return not self._removal.alive

    def _reserve(self, size: int) -> None:
        with self._lock:
            if self.used + size > self.max_bytes:
                raise OSError(
                    errno.ENOSPC,
                    f"the download area's bound ({self.max_bytes:,} bytes) is reached",
                )
            self.used += size

    def _discard(self, target: Path, size: int) -> None:
        with self._lock:
            self.used -= size
        with contextlib.suppress(FileNotFoundError):
            os.unlink(target)
