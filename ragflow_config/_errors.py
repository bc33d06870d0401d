"""The exception hierarchy. Users catch one type per failure class.

``RagflowError`` is the root of everything this package raises on purpose.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable

from ._redact import redact_urls


class RagflowError(Exception):
    """Root of every error raised by ragflow-config.

    A message may quote a URL, from a client library's error or from a file:
    its credentials are masked before anyone can print it.
    """

    def __init__(self, *args: object) -> None:
        super().__init__(*(redact_urls(arg) if isinstance(arg, str) else arg for arg in args))


class MissingExtraError(RagflowError, ImportError):
    """An optional dependency is not installed; the message names the extra."""


class ParserError(RagflowError, ValueError):
    """A file could not be parsed: corrupt, truncated, encrypted or mislabelled.

    The message always names the file and the cause.
    """

    def __init__(self, filename: str, cause: str) -> None:
        super().__init__(f"{filename}: {cause}")
        self.filename = filename
        self.cause = cause

    def __reduce__(self) -> tuple[type[ParserError], tuple[str, str]]:
        # Parsers run in worker processes; the error must survive the trip back.
        return (type(self), (self.filename, self.cause))


class ParserFileNotFoundError(ParserError, FileNotFoundError):
    """A parser was given a path that names no file.

    Both a ``ParserError`` (what this package's callers catch) and a
    ``FileNotFoundError`` (what AgentScope's parsers raise, and code written
    for them catches). ``filename`` is the document's name, as for every
    ``ParserError``; ``path`` is the path that was not found.
    """

    def __init__(self, filename: str, path: str) -> None:
        super().__init__(filename, f"no such file: {path}")
        self.path = path
        self.errno = errno.ENOENT
        self.strerror = os.strerror(errno.ENOENT)

    def __str__(self) -> str:
        return f"{self.filename}: {self.cause}"

    def __reduce__(self) -> tuple[type[ParserError], tuple[str, str]]:
        return (type(self), (self.filename, self.path))


class EmbeddingError(RagflowError, RuntimeError):
    """An embedding model failed: bad credentials, a rejected request, retries exhausted.

    A ``RuntimeError`` too, as AgentScope's DashScope model raises for a failed request.
    """


class UnsupportedInputError(RagflowError, TypeError, ValueError):
    """A model was given an input it cannot take: a ``DataBlock`` for a text-only model.

    A ``TypeError``, and a ``ValueError`` as AgentScope raises for it.
    """


class MixedLibrariesError(RagflowError, TypeError):
    """An object of AgentScope's reached this library where ours is needed, or one of ours
    reached AgentScope's code. The message names both libraries and the way across."""


class VectorStoreError(RagflowError):
    """A vector store is unreachable, timed out, or rejected an operation.

    The message names the store and the cause.
    """

    def __init__(self, store: str, cause: str) -> None:
        super().__init__(f"{store}: {cause}")
        self.store = redact_urls(store)
        self.cause = redact_urls(cause)  # a run reports it as a document's failure

    def __reduce__(self) -> tuple[type[VectorStoreError], tuple[str, str]]:
        return (type(self), (self.store, self.cause))


class UnstorableDocumentError(VectorStoreError):
    """A store cannot hold one document's content as given (a NUL character in
    PostgreSQL text, a value past an engine's length limit).

    The store is fine and so are other documents: a run fails this document
    alone, with this message, and goes on.
    """


class RemoteKnowledgeBaseError(RagflowError):
    """A served knowledge base (``RemoteKnowledgeBase``) answered with an error that is none
    of a local one's: a wrong or missing token (401), an unknown name (404), a server
    failure (500). ``status`` is the HTTP status."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class CollectionMismatchError(RagflowError):
    """A collection exists but was built for other vectors (another dimension count)."""


class ConfigError(RagflowError):
    """A pipeline file is invalid. ``issues`` holds every problem found, each with its place."""

    def __init__(self, issues: list[ConfigIssue]) -> None:
        self.issues = issues
        super().__init__("\n".join(str(issue) for issue in issues))


def defined(names: Iterable[str]) -> str:
    """``a, b``: the names a file defines, for "(defined: ...)"; ``none`` when there are none.

    A name holding a line break or another unprintable character is quoted, so a
    message stays on one line whatever the file's keys hold.
    """
    shown = [name if name.isprintable() else repr(name) for name in names]
    return ", ".join(shown) or "none"


def format_path(path: tuple[str | int, ...]) -> str:
    """``("knowledge_bases", 0, "chunker")`` -> ``knowledge_bases[0].chunker``."""
    text = ""
    for part in path:
        if isinstance(part, str) and not part.isprintable():  # a key holding a line break
            part = repr(part)[1:-1]
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


class ConfigIssue:
    """One problem in a pipeline file: where it is and what was expected."""

    def __init__(self, file: str, line: int, column: int, path: str, message: str) -> None:
        self.file = file
        self.line = line
        self.column = column
        self.path = path
        self.message = redact_urls(message)  # schema messages echo values, URLs included

    def as_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "path": self.path,
            "message": self.message,
        }

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}"
        return f"{where}: {self.path}: {self.message}" if self.path else f"{where}: {self.message}"

    def __repr__(self) -> str:
        return f"ConfigIssue({self})"


class ChatModelError(RagflowError):
    """A chat model call failed: bad credentials, a rejected request, retries exhausted."""
