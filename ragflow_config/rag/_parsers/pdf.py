"""PDF files, one section per page, via pdfplumber."""

from __future__ import annotations

import io
import logging
from typing import Any, ClassVar

from pydantic import Field

from ..._component import ComponentParameters
from ..._document import Section
from ..._errors import ParserError
from ..._extras import require
from ...message import TextBlock
from ._content import damaged, password_protected, wrong_content
from ._ocr import OcrMode, ocr_requires, recognise
from ._tables import TABLE_FORMAT_DESCRIPTION, TableFormat, render_table
from .base import ParserBase

logger = logging.getLogger("ragflow_config.parsers")

# Readers accept a PDF header anywhere in the first KiB, after leading junk.
_HEADER_WINDOW = 1024

# Pages are rendered for OCR at 150 dpi (bench/ocr_accuracy.py on real scans: 99.5% of
# characters right; 100 dpi gets 96.4%, 200 dpi 99.6% for 40% more CPU).
_OCR_RESOLUTION = 150

BBox = tuple[float, float, float, float]


class PDFParser(ParserBase):
    """PDF files: one text section per page, in page order.

    Each section is ``TextBlock(page text)`` with ``metadata={"page": n}``, ``n``
    counting from 1. Lines are joined with ``\\n``.

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
    requires: ClassVar[dict[str, str]] = {"pdfplumber": "rag"}

    class Parameters(ComponentParameters):
        added_later: ClassVar[frozenset[str]] = frozenset({"ocr"})

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
        pdfplumber = require("pdfplumber", "rag")
        ocr = self.parameters.ocr
        for module, extra_name in ocr_requires(ocr).items():
            require(module, extra_name)  # before the PDF is read: a missing extra is no damage
        texts: dict[int, str] = {}
        ocred: set[int] = set()
        try:
            with pdfplumber.open(io.BytesIO(data)) as pdf:
                for number, page in enumerate(pdf.pages, start=1):
                    text = "" if ocr == "always" else self._page_text(page)
                    if not text and ocr != "never":
                        text = recognise(page.to_image(resolution=_OCR_RESOLUTION).original)
                        ocred.add(number)
                    texts[number] = text
                    page.close()  # drops the page's cached layout objects
        except Exception as exc:  # pdfminer reports damage with many exception types
            raise _pdf_error(filename, exc) from exc

        without_text = [number for number, text in texts.items() if not text]
        extra: dict[str, Any] = {}
        if without_text:
            extra["pages_without_text"] = without_text
            logger.warning(
                "%s: pages %s have no text layer (scanned?) and are not indexed; %s",
                filename,
                without_text,
                "OCR found no text on them either"
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

    def _page_text(self, page: Any) -> str:
        """The page's lines top to bottom, each table's rendering before the first line below
        its top edge."""
        tables = self._tables(page)
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
