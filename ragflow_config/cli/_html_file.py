"""Where `eval --html` writes its report, said once for both of eval's paths."""

from __future__ import annotations

import sys
from pathlib import Path


def write_html(path: Path, report: str) -> None:
    """Write ``eval --html``'s report and say where, on stderr: with ``--json``, stdout
    holds the JSON document alone."""
    path.write_text(report, encoding="utf-8")
    print(f"wrote the HTML report to {path}", file=sys.stderr)
