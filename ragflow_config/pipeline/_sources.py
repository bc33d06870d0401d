"""Finding a knowledge base's files and giving each a stable document identity."""

from __future__ import annotations

import hashlib
import os
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ._spec import KnowledgeBaseSpec, SourceSpec

_NAMESPACE = uuid.UUID("6f1d2b0e-5d8e-4c8e-9a55-2b7c1f0f9a11")


@dataclass(frozen=True)
class SourceFile:
    """One file a knowledge base indexes."""

    source: SourceSpec
    absolute: Path
    relative: str  # POSIX path relative to the source folder

    def read(self) -> bytes:
        return self.absolute.read_bytes()


def document_id(kb_name: str, source_path: str, relative: str) -> str:
    """The same file is the same document across runs and machines."""
    key = f"{kb_name}\0{Path(source_path).as_posix().rstrip('/')}\0{relative}"
    return uuid.uuid5(_NAMESPACE, key).hex


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=256)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """``**/`` spans folders, ``*`` and ``?`` stay within one path segment."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def matches(relative: str, patterns: list[str]) -> bool:
    return any(_glob_regex(pattern).match(relative) for pattern in patterns)


def discover(kb: KnowledgeBaseSpec, folder: Path) -> Iterator[SourceFile]:
    """Every file of every source, in a stable order.

    Hidden files and folders (names starting with ``.``) are skipped.
    """
    for source in kb.sources:
        root = (folder / source.path).resolve()
        if not root.is_dir():
            raise FileNotFoundError(f"source folder {source.path!r} ({root}) does not exist")
        for directory, subdirectories, files in os.walk(root):
            subdirectories[:] = sorted(d for d in subdirectories if not d.startswith("."))
            for name in sorted(files):
                if name.startswith("."):
                    continue
                absolute = Path(directory) / name
                relative = absolute.relative_to(root).as_posix()
                if matches(relative, source.include) and not matches(relative, source.exclude):
                    yield SourceFile(source, absolute, relative)
