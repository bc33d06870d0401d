"""Word (.docx) files, element by element, via python-docx."""

from __future__ import annotations

import io
import logging
import re
from collections.abc import Iterator
from typing import Any, ClassVar

from pydantic import Field

from ..._component import ComponentParameters
from ..._document import Section
from ..._extras import require
from ...message import DataBlock, TextBlock
from .._media_types import sniff_image
from ._content import damaged, expect_media_type
from ._tables import TABLE_FORMAT_DESCRIPTION, TableFormat, normalize_text, render_table
from .base import ParserBase

logger = logging.getLogger("ragflow_config.parsers")

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

_W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
_A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
_R = "{http://schemas.openxmlformats.org/officeDocument/2006/relationships}"
_V = "{urn:schemas-microsoft-com:vml}"
# The alternative copy Word stores for old readers; reading it would double content.
_FALLBACK = "{http://schemas.openxmlformats.org/markup-compatibility/2006}Fallback"

# Text of the run children that carry text; everything else in a run is formatting.
_RUN_TEXT = {
    f"{_W}tab": "\t",
    f"{_W}ptab": "\t",
    f"{_W}br": "\n",
    f"{_W}cr": "\n",
    f"{_W}noBreakHyphen": "-",
}
_HEADING_STYLE = re.compile(r"heading ([1-9])")
# What makes a paragraph without text more than an empty line.
_NOT_BLANK = (
    f"{_W}drawing",
    f"{_W}pict",
    f"{_W}object",
    "{http://schemas.openxmlformats.org/officeDocument/2006/math}oMath",
)


class WordParser(ParserBase):
    """Word documents (.docx; not legacy .doc), in document order.

    Paragraphs, and tables unless ``separate_table``, are collected into one
    text section until an image (with ``include_image``) or a separated table
    interrupts them; the text sections have ``metadata={}``. Blocks are joined
    with ``\\n``, as in AgentScope; a paragraph Word shows as an empty line
    (no text, picture, object or equation) is kept as one, except at the start
    and end of a section::

        # Annual report
        Revenue grew.\tSee the table.
        A second line after a line break.

        | Region | Q1 |
        | --- | --- |
        | North | 120 |

    Paragraphs in a Heading N (or Title, as level 1) style, or a style based on
    one, become Markdown headings, ``#`` repeated N times (at most six). A tab is
    kept as ``\\t`` and a line, page or column break as ``\\n``. Text boxes
    follow their anchoring paragraph, one line per box paragraph. Content
    controls are read through. Tables are written in ``table_format`` (see
    ``_tables``); a merged cell's text appears once, in its first cell.

    With ``include_image`` each embedded picture becomes its own section,
    ``DataBlock.from_bytes(image, media_type, name=filename)`` with
    ``metadata={"media_type": ...}``, right after the text of its paragraph
    (after the table for a picture inside one). Linked pictures are skipped.
    Headers, footers, footnotes, comments and equations are not read.
    """

    supported_media_types: ClassVar[list[str]] = [DOCX]
    requires: ClassVar[dict[str, str]] = {"docx": "rag"}

    class Parameters(ComponentParameters):
        include_image: bool = Field(
            default=True, description="Emit each embedded picture as its own image section."
        )
        separate_table: bool = Field(
            default=False, description="Emit each table as its own text section."
        )
        table_format: TableFormat = Field(default="markdown", description=TABLE_FORMAT_DESCRIPTION)

    parameters: Parameters

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [".docx"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = self.read_bytes(file, filename)
        expect_media_type(data, filename, "Word", self.supported_media_types)
        docx = require("docx", "rag")
        try:
            document = docx.Document(io.BytesIO(data))
            return _DocumentReader(document, filename, self.parameters).read()
        except Exception as exc:  # python-docx surfaces damage as KeyError, XMLSyntaxError, ...
            raise damaged(filename, "Word", exc) from exc


class _DocumentReader:
    """One pass over one document's body, collecting text until something interrupts it."""

    def __init__(self, document: Any, filename: str, parameters: WordParser.Parameters) -> None:
        self.document = document
        self.filename = filename
        self.parameters = parameters
        # Heading level by paragraph style id: resolving a style is slow in python-docx.
        self._levels: dict[str | None, int] = {}
        self.sections: list[Section] = []
        self.blocks: list[str] = []

    def read(self) -> list[Section]:
        for element in _body_elements(self.document.element.body):
            if element.tag == f"{_W}p":
                self._paragraph(element)
            else:
                self._table(element)
        self._flush()
        return self.sections

    def _paragraph(self, paragraph: Any) -> None:
        text = _paragraph_text(paragraph)
        level = self._heading_level(paragraph) if text else 0
        if level:
            text = "#" * level + " " + " ".join(text.split())
        if text:
            self.blocks.append(text)
        elif self.blocks and not any(True for _ in paragraph.iter(*_NOT_BLANK)):
            self.blocks.append("")  # an empty line in Word; dropped if nothing follows
        self._images(paragraph)

    def _table(self, table: Any) -> None:
        rendered = render_table(_table_rows(table), self.parameters.table_format)
        if rendered and self.parameters.separate_table:
            self._flush()
            self.blocks.append(rendered)
            self._flush()
        elif rendered:
            self.blocks.append(rendered)
        self._images(table)

    def _heading_level(self, paragraph: Any) -> int:
        style_id = paragraph.style  # the w:pStyle id; None for the default style
        if style_id not in self._levels:
            self._levels[style_id] = self._style_level(paragraph)
        return self._levels[style_id]

    def _style_level(self, paragraph: Any) -> int:
        from docx.text.paragraph import Paragraph

        style = Paragraph(paragraph, self.document).style
        while style is not None:
            name = (style.name or "").lower()
            if name == "title":
                return 1
            match = _HEADING_STYLE.fullmatch(name)
            if match:
                return min(int(match[1]), 6)
            style = style.base_style
        return 0

    def _images(self, element: Any) -> None:
        if not self.parameters.include_image:
            return
        for relationship_id in _image_relationship_ids(element):
            try:
                part = self.document.part.related_parts[relationship_id]
                blob: bytes = part.blob
            except KeyError:
                logger.warning(
                    "%s: skipping a picture with a broken relationship %s",
                    self.filename,
                    relationship_id,
                )
                continue
            media_type = sniff_image(blob) or part.content_type
            self._flush()
            self.sections.append(
                Section(
                    content=DataBlock.from_bytes(blob, media_type, name=self.filename),
                    source=self.filename,
                    metadata={"media_type": media_type},
                )
            )

    def _flush(self) -> None:
        while self.blocks and not self.blocks[-1]:
            self.blocks.pop()
        if self.blocks:
            text = "\n".join(self.blocks)
            self.sections.append(Section(content=TextBlock(text=text), source=self.filename))
            self.blocks = []


def _body_elements(container: Any) -> Iterator[Any]:
    """Paragraphs and tables in order, read through block-level content controls."""
    for child in container.iterchildren():
        if child.tag == f"{_W}sdt":
            content = child.find(f"{_W}sdtContent")
            if content is not None:
                yield from _body_elements(content)
        elif child.tag in (f"{_W}p", f"{_W}tbl"):
            yield child


def _paragraph_text(paragraph: Any) -> str:
    """The paragraph's own runs, then one line per paragraph of its text boxes."""
    pieces: list[str] = []
    for run in paragraph.iter(f"{_W}r"):
        if _owner(run, f"{_W}p") is not paragraph or _in_fallback(run, paragraph):
            continue
        for child in run.iterchildren():
            if child.tag == f"{_W}t":
                pieces.append(child.text or "")
            else:
                pieces.append(_RUN_TEXT.get(child.tag, ""))
    lines = [normalize_text("".join(pieces))]
    for box in paragraph.iter(f"{_W}txbxContent"):
        if _owner(box, f"{_W}p") is paragraph and not _in_fallback(box, paragraph):
            lines.extend(_paragraph_text(inner) for inner in box.iterchildren(f"{_W}p"))
    return "\n".join(line for line in lines if line)


def _table_rows(table: Any) -> list[list[str]]:
    """The cell grid: a merged cell's text in its first grid cell, ``""`` in the others."""
    rows: list[list[str]] = []
    for row in table.iterchildren(f"{_W}tr"):
        cells = [""] * row.grid_before
        for cell in row.iterchildren(f"{_W}tc"):
            text = "" if cell.vMerge == "continue" else _cell_text(cell)
            cells.append(text)
            cells.extend([""] * (cell.grid_span - 1))
        rows.append(cells)
    return rows


def _cell_text(cell: Any) -> str:
    """Every paragraph in the cell, nested tables included, one per line."""
    lines = (
        _paragraph_text(paragraph)
        for paragraph in cell.iter(f"{_W}p")
        if _owner(paragraph, f"{_W}txbxContent", stop=cell) is None
        and not _in_fallback(paragraph, cell)
    )
    return "\n".join(line for line in lines if line)


def _image_relationship_ids(element: Any) -> list[str]:
    """Embedded pictures in ``element``: DrawingML first, then legacy VML."""
    ids = [
        blip.get(f"{_R}embed")
        for blip in element.iter(f"{_A}blip")
        if not _in_fallback(blip, element)
    ]
    ids += [
        image.get(f"{_R}id")
        for image in element.iter(f"{_V}imagedata")
        if not _in_fallback(image, element)
    ]
    return [relationship_id for relationship_id in ids if relationship_id]


def _owner(element: Any, tag: str, stop: Any = None) -> Any:
    """The nearest ancestor of ``element`` with ``tag``, not looking above ``stop``."""
    for ancestor in element.iterancestors():
        if ancestor is stop:
            return None
        if ancestor.tag == tag:
            return ancestor
    return None


def _in_fallback(element: Any, stop: Any) -> bool:
    return _owner(element, _FALLBACK, stop=stop) is not None
