"""What every source kind shares: its block in a pipeline file, its files, their identity.

A source lists the files of a knowledge base and reads each one's bytes. The
runner compares the listing with what the store holds, so a kind only says
what is there, how large, and, when the place it lists keeps one, each file's
own version marker (an object's ETag, a git blob id): a file whose marker is
the stored one is unchanged without being read.
"""

from __future__ import annotations

import hashlib
import itertools
import re
import uuid
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

import pathspec
from pydantic import BaseModel, ConfigDict, Field

from .._component import Component
from .._errors import RagflowError

_NAMESPACE = uuid.UUID("6f1d2b0e-5d8e-4c8e-9a55-2b7c1f0f9a11")


class SourceListingError(RagflowError):
    """A source could not be listed completely: the run stops before it writes or prunes.

    A listing cut short must never read as "those files were deleted".
    """


class SourceSpec(BaseModel):
    """Where a knowledge base's files come from: a folder (`path`), or a registered `type`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    type: str = Field(
        default="local",
        description="A registered source type: `local` (a folder, the default) or a remote "
        "kind (`s3`, `git`, `web`).",
    )
    parameters: dict[str, Any] = Field(
        default_factory=dict, description="The parameters of the type named by `type`."
    )
    path: str | None = Field(
        default=None,
        description="A `local` source's folder, relative to the pipeline file's folder.",
    )
    include: list[str] = Field(
        default_factory=lambda: ["**/*"],
        min_length=1,
        description="Glob patterns of files to index, relative to the source's folder or prefix.",
    )
    exclude: list[str] = Field(
        default_factory=list, description="Glob patterns of files to leave out."
    )
    metadata: dict[str, Any] = Field(
        default_factory=dict, description="Metadata stamped on every document from this source."
    )
    allow_outside: bool = Field(
        default=False,
        description="A `local` source only: let it reach outside the pipeline file's repository "
        "(or its folder, outside a repository): an absolute `path`, a `..` beyond it, symlinks "
        "leading out. Risk: the pipeline file can then put any file the indexing process can "
        "read (keys, /etc, other users' data) into searchable chunks; enable it only in a file "
        "you trust as much as the machine that runs it. Special files are never read.",
    )

    def selects(self, relative: str) -> bool:
        """Whether the file at ``relative`` (a POSIX path) is one this source indexes."""
        return matches(relative, self.include) and not matches(relative, self.exclude)


class SourceFile(ABC):
    """One file a knowledge base indexes, wherever it lives."""

    #: The source block it was listed by.
    source: SourceSpec
    #: The source's stable name: a local folder as written, a remote source's URL. With
    #: ``relative`` it makes the document's id, so it never names a temporary download.
    origin: str
    #: The POSIX path within the source (a folder's file, an object's key after the prefix).
    relative: str
    #: The source's own version marker, or None where there is none (a local file).
    version: str | None = None
    #: The media type the source declares for it (a web page's ``Content-Type``), or None:
    #: the runner then detects it from its name and bytes.
    media_type: str | None = None
    #: Whether reading it is a local read, quick enough to do without leaving the event loop.
    reads_quickly: ClassVar[bool] = False

    @abstractmethod
    def size(self) -> int:
        """Its size in bytes, known before it is read (OSError when it is gone)."""

    @abstractmethod
    def read(self) -> bytes:
        """Its bytes (OSError when they cannot be had)."""


@dataclass(frozen=True, kw_only=True)
class ListedFile(SourceFile):
    """A remote file as its source's listing gave it: its size and version marker known
    before it is fetched."""

    source: SourceSpec
    origin: str
    relative: str
    version: str | None
    listed_size: int

    def size(self) -> int:
        return self.listed_size


class SourceBase(Component):
    """A kind of source: lists a source block's files."""

    #: Whether its files live elsewhere: `path` and `allow_outside` do not apply.
    remote: ClassVar[bool] = True

    @abstractmethod
    def origin(self, spec: SourceSpec) -> str:
        """The source's stable name, as documents record it in ``source``."""

    @abstractmethod
    def files(self, spec: SourceSpec, folder: Path) -> Iterator[SourceFile]:
        """Every file ``spec`` selects, in a stable order; ``folder`` holds the pipeline file.

        Raises :class:`SourceListingError` when the listing is not complete.
        """

    def sample(self, spec: SourceSpec, folder: Path, limit: int) -> Iterator[SourceFile]:
        """The first ``limit`` files, or about as many, for a look at what the source holds
        (``init``): never a listing to delete by. A kind whose listing has a bound of its
        own (a crawl's pages) stops there rather than fail."""
        return itertools.islice(self.files(spec, folder), limit)


def document_id(kb_name: str, origin: str, relative: str) -> str:
    """The same file is the same document across runs and machines."""
    key = f"{kb_name}\0{_origin_key(origin)}\0{relative}"
    return uuid.uuid5(_NAMESPACE, key).hex


@lru_cache(maxsize=256)
def _origin_key(origin: str) -> str:
    # Once per source, not once per file: a run asks for thousands of ids.
    if "://" in origin:
        return origin.rstrip("/")
    return Path(origin).as_posix().rstrip("/")


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=256)
def _pattern_spec(patterns: tuple[str, ...]) -> pathspec.GitIgnoreSpec:
    return pathspec.GitIgnoreSpec.from_lines(patterns)


def matches(relative: str, patterns: list[str]) -> bool:
    """Whether ``relative`` (a POSIX path) matches ``patterns``, as in a ``.gitignore``.

    ``*.md`` matches at any depth; a pattern with a ``/`` is anchored to the
    source folder; ``**`` spans folders; ``[1-4]`` is a character class; a
    leading ``!`` takes matched files back out.
    """
    return _pattern_spec(tuple(patterns)).match_file(relative)


def pattern_problem(pattern: str) -> str | None:
    """What is wrong with an include or exclude pattern that would silently match nothing."""
    if re.search(r"\{[^{}]*,[^{}]*\}", pattern):
        return (
            f"{pattern!r}: braces are not pattern syntax here (patterns are gitignore-style); "
            "list each alternative as a pattern of its own"
        )
    return None
