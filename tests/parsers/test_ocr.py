"""OCR (``ocr:`` of PDFParser and ImageParser) on a real scanned page.

The scan is ``tests/fixtures/scanned-notice.pdf``, page 1 of pdfplumber's test PDF of
an administrative penalty notice of Changzhou customs (see tests/fixtures/SOURCES.md).
Recognising a whole page costs seconds of CPU, so most tests read a band of three
of its lines, cut from the page as pdfplumber renders it.
"""

from __future__ import annotations

import io
import logging
import sys
from pathlib import Path

import pytest

from ragflow_config._errors import MissingExtraError
from ragflow_config.rag import ImageParser, ParserError, PDFParser

from .conftest import bytes_of, fixture_path, image_bytes, text_of, texts

# The band's three lines, as a reader transcribes them, punctuation left out (see lines()).
BAND = ["当事人哈尔滨电气国际工程有限责任公司", "法定代表人郭宇", "海关注册登记编码2301914001"]

TYPED = "Quarterly report: revenue grew in every region."


@pytest.fixture(scope="module")
def scan_band() -> bytes:
    """Three lines of the scanned page as a PNG (150 dpi)."""
    import pdfplumber

    with pdfplumber.open(fixture_path("scanned-notice.pdf")) as pdf:
        page = pdf.pages[0].to_image(resolution=150).original
    buffer = io.BytesIO()
    page.crop((0, 240, page.width, 440)).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture(scope="module")
def typed_then_scanned(scan_band: bytes) -> bytes:
    """A PDF of two pages: one typed line (a text layer), then the scanned band (none)."""
    from reportlab.lib.utils import ImageReader
    from reportlab.pdfgen import canvas

    buffer = io.BytesIO()
    pdf = canvas.Canvas(buffer, pagesize=(580, 110))
    pdf.setFont("Helvetica", 12)
    pdf.drawString(20, 50, TYPED)
    pdf.showPage()
    pdf.drawImage(ImageReader(io.BytesIO(scan_band)), 0, 14, width=580, height=96)
    pdf.showPage()
    pdf.save()
    return buffer.getvalue()


def lines(text: str) -> list[str]:
    """Recognised lines, letters and digits only: the engine may put a space between
    Chinese and digits, and mistake a small full-width semicolon for a colon."""
    return ["".join(char for char in line if char.isalnum()) for line in text.split("\n")]


async def test_auto_reads_only_the_page_without_a_text_layer(typed_then_scanned: bytes) -> None:
    sections = await PDFParser(ocr="auto").parse(typed_then_scanned, "mixed.pdf")

    assert [section.metadata for section in sections] == [{"page": 1}, {"page": 2, "ocr": True}]
    assert text_of(sections[0]) == TYPED  # the text layer, as without OCR
    assert lines(text_of(sections[1])) == BAND


async def test_always_reads_pages_with_a_text_layer_by_ocr_too(typed_then_scanned: bytes) -> None:
    sections = await PDFParser(ocr="always").parse(typed_then_scanned, "mixed.pdf")

    assert [section.metadata for section in sections] == [
        {"page": 1, "ocr": True},
        {"page": 2, "ocr": True},
    ]
    # Recognised from the rendered page: the words are the typed ones.
    assert text_of(sections[0]).split() == TYPED.split()


async def test_never_leaves_the_scan_unread_as_before(
    typed_then_scanned: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="ragflow_config.parsers"):
        sections = await PDFParser().parse(typed_then_scanned, "mixed.pdf")

    assert texts(sections) == [TYPED]
    assert sections[0].metadata == {"page": 1, "pages_without_text": [2]}
    assert "mixed.pdf: pages [2] have no text layer" in caplog.text
    assert "set the parser's `ocr` to auto" in caplog.text


async def test_a_whole_scanned_page_is_read() -> None:
    """The real scanned page: its title, case number and closing figures."""
    sections = await PDFParser(ocr="auto").parse(fixture_path("scanned-notice.pdf"), "notice.pdf")

    first = lines(text_of(sections[0]))
    assert first[0] == "行政处罚决定书"
    assert "常关缉违字201913号" in first
    assert BAND[2] in first
    assert "114357KG焊管193153KG价值共计人民币66873023元" in first
    assert [section.metadata for section in sections] == [{"page": 1, "ocr": True}]


async def test_an_image_becomes_the_text_in_it(scan_band: bytes) -> None:
    [section] = await ImageParser(ocr="auto").parse(scan_band, "band.png")

    assert section.metadata == {"media_type": "image/png", "ocr": True}
    assert lines(text_of(section)) == BAND
    assert section.source == "band.png"


async def test_an_image_without_text_stays_an_image() -> None:
    data = image_bytes("PNG", size=(64, 48))
    [section] = await ImageParser(ocr="always").parse(data, "red.png")

    assert bytes_of(section) == data
    assert section.metadata == {"media_type": "image/png"}


async def test_a_photo_whose_ocr_is_noise_is_no_text_not_a_chunk_of_symbols() -> None:
    # Pillow's test photo: RapidOCR reads "★★★" (confidence 0.97) and "★K" (0.62) in it.
    data = Path(fixture_path("hopper.png")).read_bytes()
    [section] = await ImageParser(ocr="auto").parse(data, "hopper.png")

    assert bytes_of(section) == data  # an image, which a text-only model skips and says so
    assert section.metadata == {"media_type": "image/png"}


async def test_lines_below_the_confidence_threshold_are_dropped(scan_band: bytes) -> None:
    [section] = await ImageParser(ocr="auto", ocr_min_confidence=1.0).parse(scan_band, "b.png")
    assert bytes_of(section) == scan_band


async def test_never_keeps_an_image_with_text_an_image(scan_band: bytes) -> None:
    [section] = await ImageParser().parse(scan_band, "band.png")
    assert bytes_of(section) == scan_band


async def test_a_damaged_image_is_still_a_parser_error_with_ocr(scan_band: bytes) -> None:
    with pytest.raises(ParserError, match=r"^cut\.png: damaged image/png file"):
        await ImageParser(ocr="auto").parse(scan_band[: len(scan_band) // 2], "cut.png")


async def test_a_missing_ocr_engine_names_the_extra_not_a_damaged_pdf(
    typed_then_scanned: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "rapidocr_onnxruntime", None)
    with pytest.raises(MissingExtraError, match=r"ragflow-config\[ocr\]"):
        await PDFParser(ocr="auto").parse(typed_then_scanned, "mixed.pdf")
