"""A table cut across chunks repeats its header row at the top of each chunk (issue 54, item 5).

The table is a real one: the attributes table of the Python curses HOWTO
(``pipelines/mixed/html/howto/curses.html``) as ``HTMLParser`` renders it. Each
chunker cuts it with a chunk size that holds a few of its rows.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from ragflow_config.rag import (
    ApproxTokenChunker,
    ChunkerBase,
    HeadingChunker,
    HTMLParser,
    RecursiveChunker,
    TokenChunker,
)
from ragflow_config.rag._chunkers._tables import repeat_table_headers

PAGE = Path(__file__).parents[2] / "pipelines/mixed/html/howto/curses.html"
HEADER = "| Attribute | Description |\n| --- | --- |\n"
ROWS = ["| A_BLINK |", "| A_BOLD |", "| A_DIM |", "| A_REVERSE |", "| A_STANDOUT |"]


def attributes_section() -> list:
    sections = asyncio.run(HTMLParser().parse(str(PAGE), PAGE.name))
    return [section for section in sections if HEADER in section.content.text]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "chunker",
    [
        RecursiveChunker(unit="characters", chunk_size=120, overlap=0),
        RecursiveChunker(chunk_size=40, overlap=0),
        TokenChunker(chunk_size=40, overlap=0),
        ApproxTokenChunker(chunk_size=30, overlap=0),
        HeadingChunker(chunk_size=40, overlap=0, prepend_headings=False),
    ],
    ids=["recursive-characters", "recursive-tokens", "token", "approx_token", "heading"],
)
def test_every_chunk_with_table_rows_opens_them_with_the_header(chunker: ChunkerBase) -> None:
    chunks = asyncio.run(chunker.chunk(attributes_section()))
    with_rows = [
        chunk.content.text for chunk in chunks if any(r in chunk.content.text for r in ROWS)
    ]  # type: ignore[union-attr]

    assert len(with_rows) >= 2  # the table was cut
    for text in with_rows:
        first_row = min(text.index(row) for row in ROWS if row in text)
        assert HEADER in text[:first_row], text
    assert all(any(row in text for text in with_rows) for row in ROWS)  # no row lost


def test_the_header_counts_in_the_budget_and_a_table_that_fits_is_kept() -> None:
    table = HEADER + "".join(f"| A_{n} | text {n} |\n" for n in range(10))

    cut = repeat_table_headers(table, len, 80).split("\n\n")

    assert len(cut) > 1
    assert all(len(part.strip("\n")) <= 80 and part.startswith(HEADER) for part in cut)
    assert repeat_table_headers(table, len, len(table)) == table
