"""Legacy .xls files that are bare BIFF streams (Excel 2.x-4.0), not OLE2 containers."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragflow_config.rag import ExcelParser, ParserError
from ragflow_config.rag._media_types import detect

from .conftest import fixture_path, text_of

BIFF4 = "biff4_no_format_no_window2.xls"  # xlrd's own test file, 27 rows x 4 columns


async def test_a_biff4_worksheet_is_read_like_any_workbook() -> None:
    sections = await ExcelParser().parse(fixture_path(BIFF4), "prices.xls")

    assert len(sections) == 1
    assert sections[0].metadata == {"sheets": ["Sheet 1"]}
    lines = text_of(sections[0]).splitlines()
    assert lines[:4] == [
        "Sheet: Sheet 1",
        "| ID | TOTAL | MAIN | SUB |",
        "| --- | --- | --- | --- |",
        "| A | DOG & CAT PRODUCTS | Dog & Cat Product |  |",
    ]
    assert len(lines) == 1 + 27 + 1  # the sheet line, 27 rows, the header rule


def test_a_bare_biff_stream_is_recognised_by_its_content() -> None:
    data = Path(fixture_path(BIFF4)).read_bytes()
    assert detect("prices.bin", data) == "application/vnd.ms-excel"


async def test_a_biff_stream_xlrd_cannot_read_is_a_parser_error() -> None:
    truncated = Path(fixture_path(BIFF4)).read_bytes()[:300]

    with pytest.raises(ParserError) as caught:
        await ExcelParser().parse(truncated, "cut.xls")

    assert caught.value.filename == "cut.xls"
    assert caught.value.cause.startswith("damaged Excel file")
    assert "\n" not in str(caught.value)
