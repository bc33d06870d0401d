"""The library's costly steps, as observers outside it see them (``serve``'s metrics, traces,
``run``'s traces).

A step runs inside ``observed(operation, **attributes)``; each observer added
with :func:`observing` is told when it begins (``begin``, whose answer it gets
back at the end: a trace's span) and when it ends (``end``: its duration and
its error, if any). With no observer (a run, the CLI), a step costs a check of
an empty list.

The operations, after OpenTelemetry's GenAI names where it has one:

- ``retrieval``: one ``KnowledgeBase.search`` (``knowledge_base``, ``mode``, ``top_k``);
- ``embeddings``: the query's embedding call (``knowledge_base``);
- ``store.search``: one store search of one side (``knowledge_base``, ``side``:
  dense or lexical);
- ``rerank``: the reranker's call (``knowledge_base``);
- in a run: ``run`` (``knowledge_base``), and per file written ``file``
  (``knowledge_base``, ``path``) holding ``parse`` and ``chunk`` (``path``), or
  ``prepare`` (both, in a parser process), ``embeddings`` of its chunks and
  ``store.write`` (``knowledge_base``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator, Mapping
from types import TracebackType
from typing import Any, Protocol


class Observer(Protocol):
    def begin(self, operation: str, attributes: Mapping[str, str]) -> Any:
        """A step begins; what this returns comes back to :meth:`end`."""

    def end(
        self,
        operation: str,
        attributes: Mapping[str, str],
        begun: Any,
        seconds: float,
        error: BaseException | None,
    ) -> None:
        """The step has ended, after ``seconds``, with ``error`` or without."""


_observers: list[Observer] = []


class observed:
    """``with observed("store.search", knowledge_base=..., side="dense"):`` around one step."""

    __slots__ = ("_attributes", "_begun", "_operation", "_started")

    def __init__(self, operation: str, **attributes: str) -> None:
        self._operation = operation
        self._attributes = attributes
        self._begun: list[tuple[Observer, Any]] = []
        self._started = 0.0

    def __enter__(self) -> None:
        if _observers:  # those observing now hear the end, whoever comes or goes meanwhile
            self._begun = [(o, o.begin(self._operation, self._attributes)) for o in _observers]
            self._started = time.perf_counter()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not self._begun:
            return
        seconds = time.perf_counter() - self._started
        for observer, begun in reversed(self._begun):  # the last to begin ends first
            observer.end(self._operation, self._attributes, begun, seconds, exc)


@contextlib.contextmanager
def observing(observer: Observer) -> Iterator[None]:
    """``observer`` hears of every step while the block runs (a server's lifetime)."""
    _observers.append(observer)
    try:
        yield
    finally:
        _observers.remove(observer)
