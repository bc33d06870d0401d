"""The library's costly steps, as an observer outside it sees them (``serve``'s metrics).

A step runs inside ``observed(operation, **attributes)``; each observer added
with :func:`observing` hears of it when it ends: the operation, its
attributes, its duration and whether it failed. With no observer (a run, the
CLI), a step costs a clock read and a check of an empty list.

The operations, after OpenTelemetry's GenAI names where it has one:

- ``retrieval``: one ``KnowledgeBase.search`` (``knowledge_base``, ``mode``);
- ``embeddings``: the query's embedding call (``knowledge_base``);
- ``store.search``: one store search of one side (``knowledge_base``, ``side``:
  dense or lexical);
- ``rerank``: the reranker's call (``knowledge_base``).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator, Mapping
from types import TracebackType

Observer = Callable[[str, Mapping[str, str], float, bool], None]

_observers: list[Observer] = []


class observed:
    """``with observed("store.search", knowledge_base=..., side="dense"):`` around one step."""

    __slots__ = ("_attributes", "_operation", "_started")

    def __init__(self, operation: str, **attributes: str) -> None:
        self._operation = operation
        self._attributes = attributes
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if not _observers:
            return
        seconds = time.perf_counter() - self._started
        for observer in tuple(_observers):
            observer(self._operation, self._attributes, seconds, exc_type is not None)


@contextlib.contextmanager
def observing(observer: Observer) -> Iterator[None]:
    """``observer`` hears of every step while the block runs (a server's lifetime)."""
    _observers.append(observer)
    try:
        yield
    finally:
        _observers.remove(observer)
