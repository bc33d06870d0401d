"""Library warnings are caught per file and said once with its name (issues 52 item 7, 54 item 6).

The file is the committed report.pdf with 20 bytes of its first page's compressed
content stream zeroed: PDFium still opens it, the page's table sends it to
pdfplumber, and pdfminer logs "Data-loss while decompressing corrupted data",
naming no file.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import multiprocessing
import warnings
from pathlib import Path

import pytest

from ragflow_config.executors.local import Waiting, outcome, parse_and_chunk, settle
from ragflow_config.message import TextBlock
from ragflow_config.rag import PDFParser, RecursiveChunker, Section
from ragflow_config.rag._parsers.base import ParserBase

from .conftest import fixture_path

DATA_LOSS = "broken.pdf: pdfminer: Data-loss while decompressing corrupted data"


def broken_report() -> bytes:
    data = bytearray(Path(fixture_path("report.pdf")).read_bytes())
    start = data.index(b"stream\n") + len(b"stream\n")  # page 1's content stream
    data[start + 250 : start + 270] = bytes(20)
    return bytes(data)


def chunker() -> RecursiveChunker:
    return RecursiveChunker(unit="characters", chunk_size=500)


def test_a_library_log_record_is_said_once_with_the_file_name(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chunks = asyncio.run(parse_and_chunk(PDFParser(), chunker(), broken_report(), "broken.pdf"))

    assert chunks  # what could be read is indexed
    said = [(r.name, r.getMessage()) for r in caplog.records if r.levelno >= logging.WARNING]
    assert ("ragflow_config.parsers", DATA_LOSS) in said
    assert not [name for name, _ in said if name.startswith("pdfminer")]  # never raw


class _WarningParser(ParserBase):
    """A parser whose library warns as openpyxl does, with ``warnings.warn``."""

    supported_media_types = ["text/plain"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        warnings.warn("Workbook contains no default style", UserWarning, stacklevel=1)
        warnings.warn("Workbook contains no default style", UserWarning, stacklevel=1)
        return [Section(content=TextBlock(text="text"), source=filename)]


def test_a_python_warning_is_said_once_with_the_file_name_and_a_count(
    caplog: pytest.LogCaptureFixture, recwarn: pytest.WarningsRecorder
) -> None:
    asyncio.run(parse_and_chunk(_WarningParser(), chunker(), b"text", "sheet.xlsx"))

    messages = [r.getMessage() for r in caplog.records if r.name == "ragflow_config.parsers"]
    assert [m for m in messages if "sheet.xlsx" in m] == [
        "sheet.xlsx: test_library_warnings: UserWarning: Workbook contains no default style "
        "(2 times)"
    ]
    assert not recwarn.list  # not shown as a warning too


def test_a_parser_process_sends_its_records_home_to_be_logged_there(
    caplog: pytest.LogCaptureFixture, capfd: pytest.CaptureFixture[str]
) -> None:
    request = (PDFParser(), chunker(), None, broken_report(), "broken.pdf")
    # spawn: the forkserver is one per process, and its preload belongs to ParserProcesses.
    context = multiprocessing.get_context("spawn")
    with concurrent.futures.ProcessPoolExecutor(1, mp_context=context) as pool:
        ok, prepared, records = pool.submit(outcome, request).result()

    assert ok
    assert DATA_LOSS in [record.getMessage() for record in records]
    assert "Data-loss" not in capfd.readouterr().err  # the worker printed nothing itself

    loop = asyncio.new_event_loop()
    try:
        waiting = Waiting(request, loop.create_future())
        settle([waiting], [(ok, prepared, records)])
    finally:
        loop.close()
    assert DATA_LOSS in [
        r.getMessage() for r in caplog.records if r.name == "ragflow_config.parsers"
    ]
