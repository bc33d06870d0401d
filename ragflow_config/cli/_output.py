"""What every command shares when it prints: exit codes, JSON documents, counts."""

from __future__ import annotations

import json
import sys
from typing import Any

from .._errors import ConfigIssue

EXIT_OK, EXIT_ERROR, EXIT_PENDING = 0, 1, 2
# A reader that closed the pipe (`... | head`): the shell's code for SIGPIPE.
EXIT_CLOSED_PIPE = 128 + 13
EXIT_INTERRUPTED = 128 + 2  # the shell's code for SIGINT


class Interrupted(Exception):
    """Ctrl-C: the command stops with one line saying where it was, not a traceback."""


def print_json(document: Any) -> None:
    """One JSON document on stdout: what `--json` promises in every outcome."""
    print(json.dumps(document, indent=2, ensure_ascii=False))


def print_error(message: str, as_json: bool, issues: list[ConfigIssue] | None = None) -> None:
    """An error as one `error: ...` line on stderr, or as `{"error": ...}` on stdout."""
    if as_json:
        error: dict[str, Any] = {"message": message}
        if issues is not None:
            error["issues"] = [issue.as_dict() for issue in issues]
        print_json({"error": error})
    else:
        print(f"error: {message}", file=sys.stderr)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
