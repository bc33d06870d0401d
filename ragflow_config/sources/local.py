"""A folder on the runner's disk, confined to the pipeline file's repository."""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from .._component import ComponentParameters
from .._errors import RagflowError
from .base import SourceBase, SourceFile, SourceSpec

logger = logging.getLogger("ragflow_config.pipeline")

_OPT_IN = "set `allow_outside: true` on the source to index it anyway"


class SourceOutsideError(RagflowError):
    """A source folder leads outside the folder tree its pipeline file may read."""


@dataclass(frozen=True)
class LocalFile(SourceFile):
    """A file of a local folder."""

    reads_quickly: ClassVar[bool] = True
    source: SourceSpec
    absolute: Path
    relative: str  # POSIX path relative to the source folder
    confined_to: Path | None  # the folder the file must resolve into; None when opted out

    @property
    def origin(self) -> str:  # type: ignore[override]
        return str(self.source.path)

    def size(self) -> int:
        return self.absolute.stat().st_size

    def read(self) -> bytes:
        """The file's bytes, if it still is a regular file inside ``confined_to``.

        Between discovery and this read, a path component may have become a
        symlink out of the allowed folder, or the file a FIFO. So the path is
        resolved again and checked, then opened without following a final
        symlink (swapped in since) and without blocking (a FIFO would block the
        open), and read only if what was opened is a regular file.
        """
        target = Path(os.path.realpath(self.absolute))
        if self.confined_to is not None and not target.is_relative_to(self.confined_to):
            raise OSError(errno.EACCES, f"it now leads to {target}, outside {self.confined_to}")
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        with open(os.open(target, flags), "rb") as file:
            if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
                raise OSError(errno.EACCES, "it is no longer a regular file")
            return file.read()


class LocalFolderSource(SourceBase):
    """A folder of files, relative to the pipeline file (`path:`)."""

    remote: ClassVar[bool] = False

    class Parameters(ComponentParameters):
        """A local folder has no parameters beyond the source block's `path`."""

    def origin(self, spec: SourceSpec) -> str:
        return str(spec.path)

    def files(self, spec: SourceSpec, folder: Path) -> Iterator[LocalFile]:
        """Every file of the folder ``spec.path`` names, in a stable order.

        Hidden files and folders (names starting with ``.``) are skipped. Unless
        the source has ``allow_outside``, its folder must lie within
        :func:`allowed_root` and symlinks leading out of it are skipped with a
        warning; only regular files are ever read (FIFOs, devices and sockets
        are skipped with a warning).
        """
        path = str(spec.path)
        confined_to = None if spec.allow_outside else allowed_root(folder)
        if confined_to is not None and (problem := source_escape(path, folder)):
            raise SourceOutsideError(problem)
        root = (folder / path).resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"source folder {path!r} ({root}) does not exist")
        for absolute in _walk(root, confined_to):
            relative = absolute.relative_to(root).as_posix()
            if spec.selects(relative):
                yield LocalFile(spec, absolute, relative, confined_to)


def has_files(source: SourceSpec, root: Path, confined_to: Path | None) -> bool:
    """Whether any file under ``root`` matches the source's patterns (stops at the first)."""
    return any(
        source.selects(path.relative_to(root).as_posix()) for path in _walk(root, confined_to)
    )


def allowed_root(folder: Path) -> Path:
    """What a pipeline file in ``folder`` may read: its repository, else ``folder`` itself.

    The repository is the nearest ancestor holding a ``.git`` entry (a folder,
    or a file in a worktree or submodule).
    """
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if os.path.lexists(candidate / ".git"):
            return candidate
    return folder


def source_escape(path: str, folder: Path) -> str | None:
    """Why a source ``path`` written in a pipeline file in ``folder`` leads out of bounds, or None."""
    root = allowed_root(folder)
    if Path(path).is_absolute():
        return (
            f"source path {path!r} is absolute; write it relative to the pipeline file, "
            f"within {root}, or {_OPT_IN}"
        )
    resolved = (folder / path).resolve()
    if not resolved.is_relative_to(root):
        return f"source path {path!r} leads to {resolved}, outside {root}; {_OPT_IN}"
    return None


def _walk(root: Path, confined_to: Path | None) -> Iterator[Path]:
    """The regular files under ``root``, through symlinks that stay within ``confined_to``."""
    walked: set[str] = set()
    for directory, subdirectories, files in os.walk(root, followlinks=True):
        real = os.path.realpath(directory)
        if real in walked:  # a folder link to a folder already walked: a loop, or a repeat
            subdirectories[:] = []
            continue
        walked.add(real)
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if not name.startswith(".") and _admitted(Path(directory, name), confined_to)
        )
        for name in sorted(files):
            path = Path(directory, name)
            if not name.startswith(".") and _admitted(path, confined_to) and _regular(path):
                yield path


def _admitted(path: Path, confined_to: Path | None) -> bool:
    """Whether ``path`` may be followed: not a symlink leading outside ``confined_to``.

    Only symlinks need resolving: anything else lies in its folder, already admitted.
    """
    if confined_to is None or not path.is_symlink():
        return True
    target = Path(os.path.realpath(path))
    if target.is_relative_to(confined_to):
        return True
    logger.warning(
        "skipped %s: a symlink to %s, outside %s; %s", path, target, confined_to, _OPT_IN
    )
    return False


def _regular(path: Path) -> bool:
    """Whether ``path`` is a regular file; stat does not open it, so a FIFO cannot block."""
    try:
        mode = path.stat().st_mode
    except OSError:  # a dangling symlink: reading it will report why
        return True
    if stat.S_ISREG(mode):
        return True
    logger.warning("skipped %s: not a regular file (a FIFO, device or socket)", path)
    return False
