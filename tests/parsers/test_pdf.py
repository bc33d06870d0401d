"""PDFParser on committed PDFs (see tests/fixtures/SOURCES.md)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from ragflow_config.rag import ParserError, PDFParser
from ragflow_config.rag._parsers._tables import JSON_MARKER

from .conftest import fixture_path, image_bytes, text_of, texts

REPORT_PAGE_1 = (
    "Quarterly report\n"
    "Revenue grew in every region.\n"
    "\n"
    "| Region | Q1 | Q2 |\n"
    "| --- | --- | --- |\n"
    "| North | 120 | 135 |\n"
    "| South | 98 | 110 |\n"
    "\n"
    "Figures are in thousands of euros."
)


async def test_one_section_per_page_with_the_table_in_place() -> None:
    sections = await PDFParser().parse(fixture_path("report.pdf"), "report.pdf")

    assert texts(sections) == [
        REPORT_PAGE_1,
        "Appendix: methodology notes.",
    ]
    assert [section.metadata for section in sections] == [
        {"page": 1, "pages_without_text": [2]},
        {"page": 3, "pages_without_text": [2]},
    ]
    assert {section.source for section in sections} == {"report.pdf"}


async def test_json_tables_parse_as_one_array() -> None:
    sections = await PDFParser(table_format="json").parse(
        Path(fixture_path("report.pdf")).read_bytes(), "report.pdf"
    )
    text = text_of(sections[0])
    before, table, after = text.split("\n\n")
    assert before == "Quarterly report\nRevenue grew in every region."
    marker, body = table.split("\n")
    assert marker == JSON_MARKER
    assert json.loads(body) == [
        ["Region", "Q1", "Q2"],
        ["North", "120", "135"],
        ["South", "98", "110"],
    ]
    assert after == "Figures are in thousands of euros."


async def test_without_table_extraction_cells_stay_in_the_plain_text() -> None:
    sections = await PDFParser(extract_tables=False).parse(fixture_path("report.pdf"), "r.pdf")
    assert text_of(sections[0]) == (
        "Quarterly report\nRevenue grew in every region.\nRegion Q1 Q2\nNorth 120 135\n"
        "South 98 110\nFigures are in thousands of euros."
    )


async def test_a_fully_scanned_pdf_gives_nothing_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="ragflow_config.parsers"):
        sections = await PDFParser().parse(fixture_path("scanned.pdf"), "scan.pdf")
    assert sections == []
    assert "scan.pdf: pages [1, 2] have no text layer" in caplog.text


async def test_a_pdf_with_text_on_every_page_has_no_scan_marker(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="ragflow_config.parsers"):
        sections = await PDFParser().parse(fixture_path("multilingual.pdf"), "m.pdf")
    assert [section.metadata for section in sections] == [{"page": 1}]
    assert caplog.text == ""


async def test_non_ascii_text_in_embedded_fonts() -> None:
    sections = await PDFParser().parse(fixture_path("multilingual.pdf"), "multilingual.pdf")
    assert text_of(sections[0]) == ("Größere Äpfel über die Straße tragen.\n知识库检索增强生成")


async def test_an_owner_password_only_pdf_opens_with_the_empty_password() -> None:
    path = fixture_path("encrypted-empty-password.pdf")
    sections = await PDFParser().parse(path, "locked.pdf")
    assert text_of(sections[0]) == "Opened without a password."


async def test_a_pdf_that_needs_a_password_is_a_parser_error() -> None:
    with pytest.raises(ParserError) as caught:
        await PDFParser().parse(fixture_path("encrypted-password.pdf"), "secret.pdf")
    assert caught.value.filename == "secret.pdf"
    assert "password-protected" in caught.value.cause


async def test_png_bytes_are_not_a_pdf() -> None:
    with pytest.raises(
        ParserError, match=r"^photo\.pdf: not a PDF file: the content is image/png$"
    ):
        await PDFParser().parse(image_bytes(), "photo.pdf")


async def test_words_keep_their_spaces_in_a_latex_pdf() -> None:
    # pdfplumber runs the words of this file's tightly set lines together
    # ("Hello, hereissometextwithoutameaning. Thistextshouldshow...").
    sections = await PDFParser().parse(fixture_path("pdflatex-4-pages.pdf"), "latex.pdf")

    text = text_of(sections[0])
    assert text.startswith(
        "Hello, here is some text without a meaning. This text should show what a printed text\n"
        "will look like at this place."
    )
    assert [section.metadata["page"] for section in sections] == [1, 2, 3, 4]


async def test_the_text_around_a_table_keeps_pdfiums_word_spacing() -> None:
    # Page 8 of py-pdf's GeoTopo book: pdfplumber takes a diagram's grid for a table, and its
    # own text of the page ran words together ("isteineTopologieaufX", "SieheißtProdukt...").
    [section] = await PDFParser().parse(fixture_path("geotopo-page-8.pdf"), "geotopo.pdf")
    text = text_of(section)

    assert "\n\n| x |\n| --- |\n\n" in text  # the grid is still found, written in place
    assert "ist eine Topologie auf X1\u00d7X2. Sie heißt Produkttopologie." in text  # above it
    assert "Abbildung 1.1: Zu x = (x1, x2) gibt es Umgebungen U1, U2" in text  # below it
    assert text.index("Produkttopologie.") < text.index("| x |") < text.index("Abbildung 1.1")
