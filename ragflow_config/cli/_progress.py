"""Progress of a run as it goes: one rewritten line on a terminal, log lines otherwise."""

from __future__ import annotations

from typing import TextIO

from ..pipeline import Change


class Progress:
    """A progress line on a terminal, one log line per change otherwise.

    Failures are left to the run's summary, which names each once.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.done = 0

    def __call__(self, kb: str, change: Change) -> None:
        self.done += 1
        if self.tty:
            self.stream.write(
                f"\r\x1b[K{kb}: {self.done} files, last: {change.action} {change.path}"
            )
            self.stream.flush()
        elif change.action not in ("unchanged", "failed", "unreadable"):
            detail = f" ({change.reason})" if change.reason else ""
            self.stream.write(f"{kb}: {change.action} {change.path}{detail}\n")

    def close(self) -> None:
        if self.tty and self.done:
            self.stream.write("\n")
