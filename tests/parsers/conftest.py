"""Real Office files built at test time with the writing side of the parsing libraries.

The PDFs and the .xls file cannot be written by the project's own libraries;
they are committed under tests/fixtures/ (see SOURCES.md there).
"""

from __future__ import annotations

import datetime
import io
from pathlib import Path
from typing import Any

import pytest

from ragflow_config.message import Base64Source, DataBlock, TextBlock
from ragflow_config.rag import Section

FIXTURES = Path(__file__).parent.parent / "fixtures"


def fixture_path(name: str) -> str:
    return str(FIXTURES / name)


def text_of(section: Section) -> str:
    assert isinstance(section.content, TextBlock), section.content
    return section.content.text


def texts(sections: list[Section]) -> list[str]:
    return [text_of(section) for section in sections]


def bytes_of(section: Section) -> bytes:
    """The bytes of an inline image section."""
    assert isinstance(section.content, DataBlock), section.content
    assert isinstance(section.content.source, Base64Source)
    return section.content.source.to_bytes()


def image_bytes(image_format: str = "PNG", size: tuple[int, int] = (24, 16)) -> bytes:
    from PIL import Image

    image = Image.new("RGB", size, color=(200, 40, 40))
    buffer = io.BytesIO()
    image.save(buffer, format=image_format)
    return buffer.getvalue()


def build_pptx() -> bytes:
    """Three slides.

    1. A title, a table, a picture, a text box, a group of two text boxes, notes.
    2. Nothing at all.
    3. Only a picture.
    """
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    blank = presentation.slide_layouts[6]

    first = presentation.slides.add_slide(blank)
    first.shapes.add_textbox(
        Inches(1), Inches(0.5), Inches(6), Inches(1)
    ).text = "Quarterly numbers"
    table = first.shapes.add_table(2, 2, Inches(1), Inches(1.5), Inches(4), Inches(1)).table
    for row, values in enumerate((("Region", "Q1"), ("North", "120"))):
        for column, value in enumerate(values):
            table.cell(row, column).text = value
    first.shapes.add_picture(io.BytesIO(image_bytes()), Inches(1), Inches(3))
    after = first.shapes.add_textbox(Inches(1), Inches(4), Inches(6), Inches(1)).text_frame
    after.text = "After the picture"
    after.add_paragraph().text = ""  # a blank paragraph is dropped
    after.add_paragraph().text = "second line"
    group = first.shapes.add_group_shape()
    group.shapes.add_textbox(Inches(1), Inches(5), Inches(2), Inches(1)).text = "Grouped one"
    group.shapes.add_textbox(Inches(4), Inches(5), Inches(2), Inches(1)).text = "Grouped two"
    first.notes_slide.notes_text_frame.text = "Mention the north first."

    presentation.slides.add_slide(blank)

    third = presentation.slides.add_slide(blank)
    third.shapes.add_picture(io.BytesIO(image_bytes("JPEG")), Inches(1), Inches(1))
    return _saved(presentation)


# A paragraph holding a text box the way Word writes one: a DrawingML copy and a
# VML fallback copy of the same box. Only one copy may be read.
_TEXT_BOX_RUN = """
<w:r xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"
     xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"
     xmlns:wps="http://schemas.microsoft.com/office/word/2010/wordprocessingShape"
     xmlns:v="urn:schemas-microsoft-com:vml">
  <mc:AlternateContent>
    <mc:Choice Requires="wps">
      <w:drawing><wps:wsp><wps:txbx><w:txbxContent>
        <w:p><w:r><w:t>Boxed note</w:t></w:r></w:p>
      </w:txbxContent></wps:txbx></wps:wsp></w:drawing>
    </mc:Choice>
    <mc:Fallback>
      <w:pict><v:shape><v:textbox><w:txbxContent>
        <w:p><w:r><w:t>Boxed note</w:t></w:r></w:p>
      </w:txbxContent></v:textbox></v:shape></w:pict>
    </mc:Fallback>
  </mc:AlternateContent>
</w:r>
"""

# A block-level content control (as templates use) wrapping one paragraph.
_CONTENT_CONTROL = """
<w:sdt xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">
  <w:sdtContent><w:p><w:r><w:t>Inside a content control.</w:t></w:r></w:p></w:sdtContent>
</w:sdt>
"""


def build_docx() -> bytes:
    """Headings, a paragraph with a tab and a line break, a merged-cell table,
    a picture, a text box and a content control."""
    from docx import Document
    from docx.enum.text import WD_BREAK
    from docx.oxml import parse_xml

    document = Document()
    document.add_heading("Annual report", level=1)
    paragraph = document.add_paragraph("Revenue grew.")
    run = paragraph.add_run()
    run.add_tab()
    run.add_text("See the table.")
    run.add_break(WD_BREAK.LINE)
    run.add_text("Second line")
    document.add_heading("Details", level=2)
    table = document.add_table(rows=3, cols=3)
    table.cell(0, 0).merge(table.cell(0, 2)).text = "Sales by region"
    for row, values in enumerate((("Region", "Q1", "Q2"), ("North", "120", "135")), start=1):
        for column, value in enumerate(values):
            table.cell(row, column).text = value
    document.add_paragraph("Before the picture.")
    document.add_picture(io.BytesIO(image_bytes()))
    boxed = document.add_paragraph("Anchor text.")
    boxed._p.append(parse_xml(_TEXT_BOX_RUN))
    # Body content goes before the section properties, which Word expects last.
    document.element.body.sectPr.addprevious(parse_xml(_CONTENT_CONTROL))
    document.add_paragraph("Closing words.")
    return _saved(document)


def build_xlsx(with_image: bool = False) -> bytes:
    """Sheets Staff (merged title, an empty row and column), Blank (no values), Notes."""
    from openpyxl import Workbook

    book = Workbook()
    staff = book.active
    staff.title = "Staff"
    staff["A1"] = "Team roster"
    staff.merge_cells("A1:C1")
    staff.append(["Name", "Age", "Joined", None, "Active"])
    staff.append(["Alice", 25, datetime.date(2021, 3, 1), None, True])
    staff.append([])
    staff.append(["Björn", 31.5, datetime.datetime(2019, 11, 20, 8, 30), None, False])
    if with_image:
        from openpyxl.drawing.image import Image

        staff.add_image(Image(io.BytesIO(image_bytes())), "G2")
        staff.add_image(Image(io.BytesIO(image_bytes("JPEG"))), "B8")
    book.create_sheet("Blank")
    notes = book.create_sheet("Notes")
    notes.append(["Note"])
    notes.append(["Pipes | and\nnew lines"])
    return _saved(book)


def _saved(document: Any) -> bytes:
    buffer = io.BytesIO()
    document.save(buffer)
    return buffer.getvalue()


@pytest.fixture(scope="session")
def pptx_bytes() -> bytes:
    return build_pptx()


@pytest.fixture(scope="session")
def docx_bytes() -> bytes:
    return build_docx()


@pytest.fixture(scope="session")
def xlsx_bytes() -> bytes:
    return build_xlsx()


@pytest.fixture(scope="session")
def xlsx_with_images() -> bytes:
    return build_xlsx(with_image=True)
