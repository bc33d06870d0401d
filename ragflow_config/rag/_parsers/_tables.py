"""Tables as text: the one Markdown and JSON rendering every document parser uses.

A table arrives as rows of cell strings. Cell text is normalised first: ``\\r\\n``,
``\\r`` and ``\\v`` (PowerPoint's soft break) become ``\\n`` and the text is
stripped. Rows and columns in which every cell is empty are dropped, wherever
they are, and short rows are padded with ``""`` to the widest row, so no cell
is ever cut off.

Markdown (the first row is the header)::

    | Region | Q1 |
    | --- | --- |
    | North | 120 |

Backslashes are doubled, ``|`` becomes ``\\|`` and a line break inside a cell
becomes a space (never ``<br>``: a chunk is read as text, where a tag is noise).
Every line ends with a newline, the last one too, as in AgentScope; a table
followed by more text is therefore followed by a blank line.

JSON: a marker line, then the whole table as ONE JSON array of row arrays on one
line (non-ASCII kept), so the text after the marker always parses::

    <system-info>A table loaded as a JSON array:</system-info>
    [["Region", "Q1"], ["North", "120"]]

With ``coordinates`` (a label such as ``A1`` per cell, as the Excel parser gives),
a non-empty Markdown cell reads ``[A1] Region`` and a JSON row becomes an
object of its non-empty cells, ``{"A1": "Region", "B1": "Q1"}``. Empty cells get
no label.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Literal

TableFormat = Literal["markdown", "json"]

TABLE_FORMAT_DESCRIPTION = (
    "How tables are written into the text: a Markdown table (first row as header) or "
    "a marker line followed by one JSON array of rows."
)

_LINE_BREAK = re.compile(r"[ \t]*\n\s*")

JSON_MARKER = "<system-info>A table loaded as a JSON array:</system-info>"


def render_table(
    rows: Sequence[Sequence[str]],
    table_format: TableFormat,
    coordinates: Sequence[Sequence[str]] | None = None,
) -> str:
    """The table as text, or ``""`` when it has no non-empty cell.

    ``coordinates``, when given, has the same shape as ``rows``.
    """
    cells = [[normalize_text(cell) for cell in row] for row in rows]
    labels = [list(row) for row in coordinates] if coordinates is not None else None
    kept_rows = [index for index, row in enumerate(cells) if any(row)]
    width = max((len(row) for row in cells), default=0)
    kept_columns = [
        column
        for column in range(width)
        if any(column < len(cells[index]) and cells[index][column] for index in kept_rows)
    ]
    if not kept_columns:
        return ""

    def pick(grid: list[list[str]]) -> list[list[str]]:
        return [[grid[r][c] if c < len(grid[r]) else "" for c in kept_columns] for r in kept_rows]

    table = pick(cells)
    labelled = pick(labels) if labels is not None else None
    if table_format == "json":
        return _json(table, labelled)
    return _markdown(table, labelled)


def normalize_text(text: str) -> str:
    """Unify line breaks to ``\\n`` and strip surrounding whitespace."""
    return text.replace("\r\n", "\n").replace("\r", "\n").replace("\v", "\n").strip()


def _markdown(table: list[list[str]], labels: list[list[str]] | None) -> str:
    def line(row_index: int) -> str:
        row = table[row_index]
        cells = [_escape(cell) for cell in row]
        if labels is not None:
            cells = [
                f"[{label}] {cell}" if cell else cell
                for label, cell in zip(labels[row_index], cells, strict=True)
            ]
        return "| " + " | ".join(cells) + " |"

    separator = "| " + " | ".join("---" for _ in table[0]) + " |"
    lines = [line(0), separator, *(line(index) for index in range(1, len(table)))]
    return "".join(f"{text}\n" for text in lines)


def _escape(cell: str) -> str:
    return _LINE_BREAK.sub(" ", cell.replace("\\", "\\\\").replace("|", "\\|"))


def _json(table: list[list[str]], labels: list[list[str]] | None) -> str:
    rows: list[list[str]] | list[dict[str, str]] = table
    if labels is not None:
        rows = [
            {label: cell for label, cell in zip(label_row, row, strict=True) if cell}
            for label_row, row in zip(labels, table, strict=True)
        ]
    return JSON_MARKER + "\n" + json.dumps(rows, ensure_ascii=False)
