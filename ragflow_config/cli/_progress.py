"""Progress of a run as it goes: a live display on a terminal, log lines otherwise."""

from __future__ import annotations

import logging
from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, ProgressColumn, Task, TextColumn, TimeRemainingColumn
from rich.progress import Progress as RichProgress
from rich.table import Column
from rich.text import Text

from ..pipeline import Change

# The files a run parsed (and embedded what it found): an unchanged, unsupported or
# skipped one is decided in microseconds or nearly, and would make the rate meaningless.
_PROCESSED = ("add", "update", "repair", "empty", "failed")


class _Rate(ProgressColumn):
    """Files processed per second of the run: not the unchanged and skipped ones."""

    def render(self, task: Task) -> Text:
        elapsed = task.elapsed or 0.0
        rate = task.fields["processed"] / elapsed if elapsed else 0.0
        return Text(f"{rate:.1f} files/s")


class _Left(TimeRemainingColumn):
    def render(self, task: Task) -> Text:
        return Text(f"{super().render(task)} left")


def _fixed(max_width: int | None = None) -> Column:
    # One line per knowledge base whatever the width: a column cut short ends in "…"
    # rather than wrap, and the bar gives up its width first.
    return Column(no_wrap=True, overflow="ellipsis", max_width=max_width)


class _ConsoleHandler(logging.Handler):
    """Log records printed through the live display's console, above the display."""

    def __init__(self, console: Console) -> None:
        super().__init__()
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self.console.print(Text(self.format(record)))
        except Exception:  # logging's contract: a handler never raises
            self.handleError(record)


class Progress:
    """Files done of the total, chunks written, failures, rate and time left, per knowledge base.

    On a terminal it is one live display, one line per knowledge base that
    fits the terminal's width (80 columns included); log records go through
    its console while it is live, so they print above it instead of into it.
    Otherwise (a CI log) one line per change worth reading. Failures and
    skipped files are left to the run's summary, which names each once.
    """

    def __init__(self, stream: TextIO, *, console: Console | None = None) -> None:
        self.stream = stream
        self.done = 0
        self._live: RichProgress | None = None
        self._tasks: dict[str, Any] = {}
        self._handler: _ConsoleHandler | None = None
        self._displaced: list[logging.Handler] = []
        if console is None and stream.isatty():
            console = Console(file=stream)
        if console is not None:
            self._live = RichProgress(
                TextColumn("{task.description}", table_column=_fixed(max_width=16)),
                BarColumn(bar_width=None, table_column=Column(ratio=1, min_width=4)),
                TextColumn(
                    "{task.completed}/{task.total} files, {task.fields[chunks]} chunks, "
                    "{task.fields[failed]} failed",
                    table_column=_fixed(),
                ),
                _Rate(table_column=_fixed()),
                _Left(table_column=_fixed()),
                console=console,
                expand=True,  # the bar takes what the text leaves of the width
            )
            self._live.start()
            self._log_through(console)

    def _log_through(self, console: Console) -> None:
        """Send the log records meant for this stream through ``console`` while it is live."""
        root = logging.getLogger()
        self._displaced = [
            handler
            for handler in root.handlers
            if isinstance(handler, logging.StreamHandler) and handler.stream is self.stream
        ]
        self._handler = _ConsoleHandler(console)
        if self._displaced:
            self._handler.setFormatter(self._displaced[0].formatter)
        for handler in self._displaced:
            root.removeHandler(handler)
        root.addHandler(self._handler)

    def files_found(self, kb: str, total: int) -> None:
        if self._live is not None:
            self._tasks[kb] = self._live.add_task(kb, total=total, chunks=0, failed=0, processed=0)

    def __call__(self, kb: str, change: Change) -> None:
        self.done += 1
        if self._live is not None:
            task = self._tasks[kb]
            fields = self._live.tasks[task].fields
            self._live.update(
                task,
                advance=1,
                chunks=fields["chunks"] + change.chunks,
                failed=fields["failed"] + change.failed,
                processed=fields["processed"]
                + (change.action in _PROCESSED and not change.remembered),
            )
        elif (
            change.action not in ("unchanged", "skipped")
            and not change.failed
            and not change.remembered  # the summary counts them: no line every run
        ):
            detail = f" ({change.reason})" if change.reason else ""
            self.stream.write(f"{kb}: {change.action} {change.path}{detail}\n")

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
        if self._handler is not None:
            root = logging.getLogger()
            root.removeHandler(self._handler)
            for handler in self._displaced:
                root.addHandler(handler)
            self._handler = None
