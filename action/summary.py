"""Append the report to the job summary.

    python action/summary.py REPORT

Appends REPORT's text to the file ``$GITHUB_STEP_SUMMARY`` names. GitHub shows at most
1 MiB of a step's summary: a longer report is cut at a line there, with a note.
Exit 1 when the variable is unset or a file cannot be read or written, 2 for a usage error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

LIMIT = 1024 * 1024  # bytes GitHub accepts in one step's summary
NOTE = "\n*(cut: the report is longer than a job summary holds)*\n"


def cut(text: str, limit: int, note: str) -> str:
    """``text`` within ``limit`` UTF-8 bytes, cut at a line end and followed by ``note``."""
    if len(text.encode("utf-8")) <= limit:
        return text
    room = limit - len(note.encode("utf-8"))
    head = text.encode("utf-8")[:room].decode("utf-8", errors="ignore")
    return head[: head.rfind("\n") + 1 or len(head)] + note


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: summary.py REPORT", file=sys.stderr)
        return 2
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if not target:
        print(
            "error: GITHUB_STEP_SUMMARY is not set (not in a GitHub Actions job?)", file=sys.stderr
        )
        return 1
    try:
        text = Path(args[0]).read_text(encoding="utf-8")
        with open(target, "a", encoding="utf-8") as summary:
            summary.write(cut(text, LIMIT, NOTE))
    except OSError as exc:
        print(f"error: cannot write the job summary: {exc}", file=sys.stderr)
        return 1
    print(f"report written to the job summary ({len(text)} characters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
