"""Markdown tables too large for one chunk, cut into tables that each repeat the header row.

A chunker that cuts a long table between rows leaves every chunk after the first
with rows of numbers that no longer say what they are (docling had the same
complaint, docling-project/docling #2975). Before a chunker splits a text, each
Markdown table in it (a ``| ... |`` line, then a ``| --- |`` separator line,
then ``| ... |`` rows, as every parser renders tables, see
``rag/_parsers/_tables.py``) that is larger than the chunk budget is rewritten
as consecutive tables of whole rows, each opening with the header and separator
lines and each within the budget, the header counted. They are apart by a blank
line, a paragraph break, which every chunker prefers to cut at, so each chunk
that holds table rows starts with their header. A table that fits is left as
it is, and so is a table with a row that does not fit beside the header.
"""

from __future__ import annotations

import re
from collections.abc import Callable

_ROW = re.compile(r"^\|.*\|[ \t]*$")
_SEPARATOR = re.compile(r"^\|(?:[ \t]*:?-{3,}:?[ \t]*\|)+[ \t]*$")


def repeat_table_headers(text: str, size: Callable[[str], int], budget: int) -> str:
    """``text`` with each table larger than ``budget`` (in ``size``'s unit) cut into tables
    of whole rows that each start with the header row and fit ``budget``."""
    if "|" not in text:
        return text
    lines = text.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        if (
            index + 1 < len(lines)
            and _ROW.match(lines[index])
            and _SEPARATOR.match(lines[index + 1])
        ):
            end = index + 2
            while end < len(lines) and _ROW.match(lines[end]):
                end += 1
            out.extend(_cut(lines[index:end], size, budget))
            index = end
        else:
            out.append(lines[index])
            index += 1
    return "\n".join(out)


def _cut(table: list[str], size: Callable[[str], int], budget: int) -> list[str]:
    """The table's lines, with a blank line and the header lines wherever it must be cut.

    Sizes add up line by line (a line break is white space to every tokenizer), so each
    row is measured once, with the line break before it.
    """
    header, rows = table[:2], table[2:]
    header_size = size("\n".join(header))
    row_sizes = [size("\n" + row) for row in rows]
    if not rows or header_size + sum(row_sizes) <= budget or header_size + max(row_sizes) > budget:
        # It fits, or some row does not fit even beside the header alone: the chunker
        # then cuts inside rows as it cuts any text.
        return table
    out: list[str] = list(header)
    used = header_size
    for row, row_size in zip(rows, row_sizes, strict=True):
        if used + row_size > budget:
            out.extend(["", *header])
            used = header_size
        out.append(row)
        used += row_size
    return out
