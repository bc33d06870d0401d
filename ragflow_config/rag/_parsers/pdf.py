"""PDF files, one section per page: text by PDFium (pypdfium2), ruled tables by pdfplumber."""

from __future__ import annotations

import contextlib
import ctypes
import io
import logging
import re
from typing import Any, ClassVar

from pydantic import Field

from ..._component import ComponentParameters
from ..._document import Section
from ..._errors import ParserError
from ..._extras import require
from ...message import TextBlock
from ._content import damaged, password_protected, wrong_content
from ._ocr import MIN_CONFIDENCE_DESCRIPTION, OcrMode, ocr_requires, recognise
from ._tables import TABLE_FORMAT_DESCRIPTION, TableFormat, render_table
from .base import ParserBase

logger = logging.getLogger("ragflow_config.parsers")

# Readers accept a PDF header anywhere in the first KiB, after leading junk.
_HEADER_WINDOW = 1024

# Pages are rendered for OCR at 150 dpi (bench/ocr_accuracy.py on real scans: 99.5% of
# characters right; 100 dpi gets 96.4%, 200 dpi 99.6% for 40% more CPU).
_OCR_RESOLUTION = 150

BBox = tuple[float, float, float, float]

# A table's edge: a line at most this far (in points) from straight, at least _MIN_EDGE long
# (pdfplumber's own default edge_min_length).
_STRAIGHT = 1.0
_MIN_EDGE = 3.0
# C0 control codes but tab and line feed: PDFium's stand-ins for glyphs without a character.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f]")


class PDFParser(ParserBase):
    """PDF files: one text section per page, in page order.

    Each section is ``TextBlock(page text)`` with ``metadata={"page": n}``, ``n``
    counting from 1. Lines are joined with ``\\n``.

    The text is PDFium's (pypdfium2): about 50 times faster than pdfplumber's
    and with the spaces between words that pdfplumber loses on tightly set
    lines (``bench/parse_quality.py``). A page that draws at least two
    horizontal and two vertical lines may hold a ruled table: pdfplumber looks
    for tables there, and writes each one it finds as below; the text above,
    between, below and beside the tables is still PDFium's. A file PDFium
    cannot open (some damaged ones) is read by pdfplumber alone.

    Tables that pdfplumber finds (ruled tables) are written in ``table_format``
    (see ``_tables``) in place of their cell text, with a blank line before and
    after; the text above and below a table keeps its reading order::

        Revenue grew in every region.

        | Region | Q1 |
        | --- | --- |
        | North | 120 |

        Figures are in thousands of euros.

    ``ocr`` reads pages by optical character recognition (see ``_ocr``): with
    ``"auto"`` the pages without a text layer (scans), with ``"always"`` every
    page, its text layer ignored; ``"never"`` (the default, as in AgentScope)
    reads only text layers. An OCR'd page's section is its recognised lines,
    top to bottom, with ``metadata={"page": n, "ocr": True}``.

    Pages that still have no text (scans without OCR, pictures) give no
    section. So that a half-indexed scan is noticed, every section of such a
    document also carries ``metadata["pages_without_text"]``, the sorted page
    numbers that gave nothing (``{"page": 1, "pages_without_text": [2]}``); the
    key is absent when every page has text. When no page has text the result is
    ``[]``, and in both cases a warning naming the file and the pages goes to
    the ``ragflow_config.parsers`` logger.

    An encrypted PDF that opens with the empty password (owner-password-only
    protection) is read normally; one that needs a password raises
    :class:`ParserError`, as does anything that is not a readable PDF.
    """

    supported_media_types: ClassVar[list[str]] = ["application/pdf"]
    requires: ClassVar[dict[str, str]] = {"pypdfium2": "rag", "pdfplumber": "rag"}

    class Parameters(ComponentParameters):
        # At its default, a parameter added since keeps the fingerprint: an upgrade alone
        # re-indexes nothing (tests/incremental/test_upgrade_fingerprint.py).
        added_later: ClassVar[frozenset[str]] = frozenset({"ocr", "ocr_min_confidence"})

        table_format: TableFormat = Field(default="markdown", description=TABLE_FORMAT_DESCRIPTION)
        extract_tables: bool = Field(
            default=True,
            description="Detect ruled tables and render them in `table_format`; when off, "
            "table cells stay in the page's plain text.",
        )
        ocr: OcrMode = Field(
            default="never",
            description="Optical character recognition (the `ocr` extra): `auto` reads the "
            "pages without a text layer (scans), `always` every page, ignoring its text "
            "layer; `never` indexes text layers only, as AgentScope does.",
        )
        ocr_min_confidence: float = Field(
            default=0.5, ge=0, le=1, description=MIN_CONFIDENCE_DESCRIPTION
        )

    parameters: Parameters

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [".pdf"]

    @classmethod
    def requires_for(cls, parameters: ComponentParameters) -> dict[str, str]:
        assert isinstance(parameters, cls.Parameters)
        return {**cls.requires, **ocr_requires(parameters.ocr)}

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = self.read_bytes(file, filename)
        if b"%PDF-" not in data[:_HEADER_WINDOW]:
            raise wrong_content(filename, "PDF", data)
        pdfium = require("pypdfium2", "rag")
        require("pdfplumber", "rag")  # before the PDF is read: a missing extra is no damage
        for module, extra_name in ocr_requires(self.parameters.ocr).items():
            require(module, extra_name)
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as exc:
            if getattr(exc, "err_code", None) == pdfium.raw.FPDF_ERR_PASSWORD:
                raise password_protected(filename, "PDF") from exc
            # PDFium refuses some damaged files that pdfminer repairs: pdfplumber reads
            # those (or says what is wrong with them).
            texts, ocred = self._read_with_pdfplumber(data, filename)
        else:
            if self.parameters.ocr != "never":
                document.init_forms()  # filled form fields are drawn into OCR's pictures
            try:
                texts, ocred = self._read(document, data, filename)
            finally:
                document.close()
        return self._sections(texts, ocred, filename)

    def _read(self, document: Any, data: bytes, filename: str) -> tuple[dict[int, str], set[int]]:
        """Each page's text by PDFium; a page that may hold a ruled table is looked at by
        pdfplumber, which writes it (``_page_text``) when it finds a table there."""
        ocr = self.parameters.ocr
        texts: dict[int, str] = {}
        ocred: set[int] = set()
        plumber: Any = None
        try:
            for index in range(len(document)):
                page = document[index]
                text = ""
                if ocr != "always":
                    tables: list[tuple[BBox, str]] = []
                    if self.parameters.extract_tables and _may_hold_a_table(page):
                        if plumber is None:
                            plumber = _open_pdfplumber(data)
                        plumber_page = plumber.pages[index]
                        tables = self._tables(plumber_page)
                        if tables:
                            text = _pdfium_text_around(page, tables)
                        plumber_page.close()  # drops the page's cached layout objects
                    if not tables:
                        text = _pdfium_text(page)
                if not text and ocr != "never":
                    text = recognise(_render(page), self.parameters.ocr_min_confidence)
                    ocred.add(index + 1)
                texts[index + 1] = text
                page.close()
        except Exception as exc:  # pdfminer reports damage with many exception types
            raise _pdf_error(filename, exc) from exc
        finally:
            if plumber is not None:
                # pdfplumber's close() reads every page's box again, so on a damaged file
                # it raises what reading it raised (reported above).
                with contextlib.suppress(Exception):
                    plumber.close()
        return texts, ocred

    def _read_with_pdfplumber(self, data: bytes, filename: str) -> tuple[dict[int, str], set[int]]:
        ocr = self.parameters.ocr
        texts: dict[int, str] = {}
        ocred: set[int] = set()
        try:
            with _open_pdfplumber(data) as pdf:
                for number, page in enumerate(pdf.pages, start=1):
                    text = "" if ocr == "always" else self._page_text(page, self._tables(page))
                    if not text and ocr != "never":
                        text = recognise(
                            page.to_image(resolution=_OCR_RESOLUTION).original,
                            self.parameters.ocr_min_confidence,
                        )
                        ocred.add(number)
                    texts[number] = text
                    page.close()  # drops the page's cached layout objects
        except Exception as exc:  # pdfminer reports damage with many exception types
            raise _pdf_error(filename, exc) from exc
        return texts, ocred

    def _sections(self, texts: dict[int, str], ocred: set[int], filename: str) -> list[Section]:
        ocr = self.parameters.ocr
        without_text = [number for number, text in texts.items() if not text]
        extra: dict[str, Any] = {}
        if without_text:
            extra["pages_without_text"] = without_text
            logger.warning(
                "%s: pages %s have no text layer (scanned?) and are not indexed; %s",
                filename,
                without_text,
                "OCR found no indexable text on them either"
                if ocr != "never"
                else "set the parser's `ocr` to auto to read them",
            )
        return [
            Section(
                content=TextBlock(text=text),
                source=filename,
                metadata={"page": number, **({"ocr": True} if number in ocred else {}), **extra},
            )
            for number, text in texts.items()
            if text
        ]

    def _page_text(self, page: Any, tables: list[tuple[BBox, str]]) -> str:
        """The page's lines top to bottom by pdfplumber, each of ``tables`` (``_tables``)
        rendered before the first line below its top edge."""
        if tables:
            boxes = [bbox for bbox, _ in tables]
            page = page.filter(
                lambda obj: obj.get("object_type") != "char" or not _inside(obj, boxes)
            )
        pending = sorted(tables, key=lambda table: table[0][1])  # by top edge
        blocks: list[str] = []
        lines: list[str] = []
        for line in page.extract_text_lines():
            while pending and pending[0][0][1] <= line["top"]:
                blocks.append("\n".join(lines))
                lines = []
                blocks.append(pending.pop(0)[1])
            lines.append(line["text"])
        blocks.append("\n".join(lines))
        blocks.extend(text for _, text in pending)
        # Paragraphs and tables apart by one blank line; a page ends without a newline.
        return "\n\n".join(block.rstrip("\n") for block in blocks if block)

    def _tables(self, page: Any) -> list[tuple[BBox, str]]:
        """Each table's box and rendering."""
        if not self.parameters.extract_tables:
            return []
        tables = (
            (table.bbox, render_table(_cells(table.extract()), self.parameters.table_format))
            for table in page.find_tables()
        )
        return [(bbox, rendered) for bbox, rendered in tables if rendered]


def _open_pdfplumber(data: bytes) -> Any:
    return require("pdfplumber", "rag").open(io.BytesIO(data))


def _pdfium_text(page: Any) -> str:
    """The page's text by PDFium (``_cleaned``)."""
    textpage = page.get_textpage()
    try:
        return _cleaned(textpage.get_text_range())
    finally:
        textpage.close()


def _pdfium_text_around(page: Any, tables: list[tuple[BBox, str]]) -> str:
    """The page's text by PDFium with each of ``tables`` (pdfplumber's boxes, measured
    from the page's top left) rendered in place: the text of the full-width bands above,
    between and below the tables, each table followed by the text beside it.

    Not pdfplumber's text there: it runs words together on tightly set lines (GeoTopo's
    pages with diagram grids that pdfplumber takes for tables: bench/README.md).
    """
    # The page's box as PDFium draws it (get_mediabox() does not inherit a parent's box).
    left, bottom, right, top = page.get_bbox()
    textpage = page.get_textpage()

    def text_in(x0: float, above: float, x1: float, below: float) -> str:
        if x1 <= x0 or below <= above:
            return ""
        return _cleaned(textpage.get_text_bounded(left + x0, top - below, left + x1, top - above))

    width, height = right - left, top - bottom
    blocks: list[str] = []
    done = 0.0  # how far down the page the text is taken
    try:
        for (x0, table_top, x1, table_bottom), rendered in sorted(tables, key=lambda t: t[0][1]):
            blocks += [text_in(0, done, width, table_top), rendered]
            blocks += [text_in(0, table_top, x0, table_bottom)]
            blocks += [text_in(x1, table_top, width, table_bottom)]
            done = max(done, table_bottom)
        blocks.append(text_in(0, done, width, height))
    finally:
        textpage.close()
    # Paragraphs and tables apart by one blank line, as pdfplumber's pages are written.
    return "\n\n".join(block.rstrip("\n") for block in blocks if block)


def _cleaned(text: str) -> str:
    """PDFium's text with lines apart by ``\\n``, a word PDFium joined across a line end
    keeping its hyphen, glyphs without a character (control codes) left out."""
    text = _CONTROL.sub("", text.replace("\r\n", "\n").replace("\ufffe", "-"))
    return "\n".join(line.rstrip() for line in text.strip().split("\n"))


def _render(page: Any) -> Any:
    """The page as a picture for OCR, drawn as pdfplumber draws it (no anti-aliasing:
    RapidOCR finds the gaps between words on sharp edges)."""
    bitmap = page.render(
        scale=_OCR_RESOLUTION / 72,
        no_smoothtext=True,
        no_smoothpath=True,
        no_smoothimage=True,
        prefer_bgrx=True,
    )
    return bitmap.to_pil().convert("RGB")


def _may_hold_a_table(page: Any) -> bool:
    """Whether the page draws at least two horizontal and two vertical straight lines, as
    every ruled table does: only such a page is worth pdfplumber's slower look for tables.
    A rectangle counts as its four sides."""
    raw = require("pypdfium2.raw", "rag")
    horizontal = vertical = 0
    x, y = ctypes.c_float(), ctypes.c_float()
    for path in page.get_objects(filter=(raw.FPDF_PAGEOBJ_PATH,), max_depth=5):
        start = previous = None
        for index in range(raw.FPDFPath_CountSegments(path.raw)):
            segment = raw.FPDFPath_GetPathSegment(path.raw, index)
            raw.FPDFPathSegment_GetPoint(segment, x, y)
            point = (x.value, y.value)
            kind = raw.FPDFPathSegment_GetType(segment)
            ends = [point]
            if kind == raw.FPDF_SEGMENT_MOVETO:
                start = previous = point
                continue
            if raw.FPDFPathSegment_GetClose(segment) and start is not None:
                ends.append(start)  # the closing side of a rectangle
            for end in ends:
                if kind == raw.FPDF_SEGMENT_LINETO and previous is not None:
                    dx, dy = abs(end[0] - previous[0]), abs(end[1] - previous[1])
                    horizontal += dy < _STRAIGHT and dx >= _MIN_EDGE
                    vertical += dx < _STRAIGHT and dy >= _MIN_EDGE
                previous = end
            if horizontal >= 2 and vertical >= 2:
                return True
    return False


def _cells(rows: list[list[str | None]]) -> list[list[str]]:
    return [[cell or "" for cell in row] for row in rows]


def _inside(char: dict[str, Any], boxes: list[BBox]) -> bool:
    """Whether the character's centre lies in one of the table boxes."""
    x = (char["x0"] + char["x1"]) / 2
    y = (char["top"] + char["bottom"]) / 2
    return any(x0 <= x <= x1 and top <= y <= bottom for x0, top, x1, bottom in boxes)


def _pdf_error(filename: str, exc: Exception) -> ParserError:
    pdfdocument = require("pdfminer.pdfdocument", "rag")
    # pdfplumber wraps pdfminer's errors; the original is its first argument.
    cause = exc.args[0] if exc.args and isinstance(exc.args[0], Exception) else exc
    if isinstance(cause, pdfdocument.PDFPasswordIncorrect):
        return password_protected(filename, "PDF")
    if isinstance(cause, pdfdocument.PDFEncryptionError):
        return ParserError(filename, f"the PDF uses an unsupported encryption: {cause}")
    return damaged(filename, "PDF", cause)
