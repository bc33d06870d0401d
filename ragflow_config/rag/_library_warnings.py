"""Warnings that parsing libraries print, caught per file and said once with the file's name.

pdfminer logs "Data-loss while decompressing corrupted data", openpyxl warns
with a ``UserWarning`` that names a path in site-packages: neither says which
file it is about, and both would be printed raw, through a run's progress
display. While one file is parsed, :func:`attributed_warnings` keeps every
``warnings.warn`` and every log record of WARNING or above from a logger
outside ``ragflow_config`` away from the log's handlers, then logs each
distinct one once, on the ``ragflow_config.parsers`` logger, as
``<file>: <library>: <message>`` (with ``(N times)`` when repeated).

A parser process's records would be printed by that process, past the
progress display: :func:`kept_records` keeps them all instead, to travel back
with the file's result and be handled by the runner's process
(:func:`handle_records`), where the display shows them.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import PurePath

logger = logging.getLogger("ragflow_config.parsers")

_OURS = "ragflow_config"
_PACKAGE_FOLDERS = ("site-packages", "dist-packages")


@contextlib.contextmanager
def attributed_warnings(filename: str) -> Iterator[None]:
    """Library warnings raised inside the block, logged after it as ``filename``'s."""
    said: Counter[str] = Counter()
    with (
        _kept(lambda record: not _is_ours(record.name)) as records,
        warnings.catch_warnings(record=True) as caught,
    ):
        warnings.simplefilter("always")
        yield
    for record in records:
        said[f"{record.name.split('.')[0]}: {record.getMessage()}"] += 1
    for warning in caught:
        said[f"{_library(warning.filename)}: {warning.category.__name__}: {warning.message}"] += 1
    for message, times in said.items():
        logger.warning("%s: %s%s", filename, message, f" ({times} times)" if times > 1 else "")


@contextlib.contextmanager
def kept_records() -> Iterator[list[logging.LogRecord]]:
    """Every record of WARNING or above logged inside the block, kept from the handlers,
    each made ready to travel to another process (its message formatted, no arguments)."""
    with _kept(lambda record: True) as records:
        yield records
    for record in records:
        record.msg, record.args, record.exc_info = record.getMessage(), None, None


def handle_records(records: list[logging.LogRecord]) -> None:
    """Log records kept by :func:`kept_records` in another process, here."""
    for record in records:
        logging.getLogger(record.name).handle(record)


@contextlib.contextmanager
def _kept(keep: Callable[[logging.LogRecord], bool]) -> Iterator[list[logging.LogRecord]]:
    """Records of WARNING or above that ``keep`` accepts, collected and not handled."""
    root = logging.getLogger()
    collector = _Collector(keep, fall_through=not root.handlers)
    muted = list(root.handlers)
    for handler in muted:
        handler.addFilter(collector.lets_through)
    root.addHandler(collector)
    try:
        yield collector.records
    finally:
        root.removeHandler(collector)
        for handler in muted:
            handler.removeFilter(collector.lets_through)


class _Collector(logging.Handler):
    """Keeps the records it is given; the root's other handlers ask it what they may show.

    In place on the root, it also stops a record from falling through to logging's last
    resort (stderr) when the root has no other handler: the records it does not keep go
    there themselves, as they would have.
    """

    def __init__(self, keep: Callable[[logging.LogRecord], bool], fall_through: bool) -> None:
        super().__init__()
        self.keep = keep
        self.fall_through = fall_through
        self.records: list[logging.LogRecord] = []

    def lets_through(self, record: logging.LogRecord) -> bool:
        return record.levelno < logging.WARNING or not self.keep(record)

    def emit(self, record: logging.LogRecord) -> None:
        if not self.lets_through(record):
            self.records.append(record)
        elif (
            self.fall_through
            and logging.lastResort is not None
            and record.levelno >= logging.lastResort.level
        ):
            logging.lastResort.handle(record)


def _is_ours(name: str) -> bool:
    return name == _OURS or name.startswith(_OURS + ".")


def _library(path: str) -> str:
    """The package a warning came from: the folder after site-packages, else the module."""
    parts = PurePath(path).parts
    for folder in _PACKAGE_FOLDERS:
        if folder in parts and parts.index(folder) + 1 < len(parts):
            return PurePath(parts[parts.index(folder) + 1]).stem
    return PurePath(path).stem
