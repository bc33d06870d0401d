"""Progress of a run as it goes: a live display on a terminal, log lines otherwise."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.progress import Progress as RichProgress
from rich.text import Text

from ..pipeline import Change


class _Rate(ProgressColumn):
    def render(self, task: Task) -> Text:
        return Text(f"{task.speed or 0:.1f} files/s")


class Progress:
    """Files done of the total, chunks written, failures, rate and time left, per knowledge base.

    On a terminal it is one live display; otherwise (a CI log) one line per
    change worth reading. Failures are left to the run's summary, which
    names each once.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.done = 0
        self._live: RichProgress | None = None
        self._tasks: dict[str, Any] = {}
        if stream.isatty():
            self._live = RichProgress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("files, {task.fields[chunks]} chunks, {task.fields[failed]} failed"),
                _Rate(),
                TimeElapsedColumn(),
                TextColumn("elapsed,"),
                TimeRemainingColumn(),
                TextColumn("left"),
                console=Console(file=stream),
            )
            self._live.start()

    def files_found(self, kb: str, total: int) -> None:
        if self._live is not None:
            self._tasks[kb] = self._live.add_task(kb, total=total, chunks=0, failed=0)

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
            )
        elif change.action not in ("unchanged", "skipped") and not change.failed:
            detail = f" ({change.reason})" if change.reason else ""
            self.stream.write(f"{kb}: {change.action} {change.path}{detail}\n")

    def close(self) -> None:
        if self._live is not None:
            self._live.stop()
