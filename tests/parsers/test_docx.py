"""WordParser on documents built with python-docx."""

from __future__ import annotations

import json

from ragflow_config.rag import WordParser

from .conftest import bytes_of, image_bytes, text_of, texts

# Paragraphs and tables join with one newline, as in AgentScope; a table's last line ends in one.
BEFORE_PICTURE = (
    "# Annual report\n"
    "Revenue grew.\tSee the table.\n"
    "Second line\n"
    "## Details\n"
    "| Sales by region |  |  |\n"
    "| --- | --- | --- |\n"
    "| Region | Q1 | Q2 |\n"
    "| North | 120 | 135 |\n"
    "\n"
    "Before the picture."
)
AFTER_PICTURE = "Anchor text.\nBoxed note\nInside a content control.\nClosing words."


async def test_document_order_with_the_picture_in_its_place(docx_bytes: bytes) -> None:
    sections = await WordParser().parse(docx_bytes, "report.docx")

    assert len(sections) == 3
    assert text_of(sections[0]) == BEFORE_PICTURE
    assert bytes_of(sections[1]) == image_bytes()
    assert sections[1].content.name == "report.docx"  # type: ignore[union-attr]
    assert text_of(sections[2]) == AFTER_PICTURE
    assert [section.metadata for section in sections] == [{}, {"media_type": "image/png"}, {}]
    assert {section.source for section in sections} == {"report.docx"}


async def test_without_pictures_everything_is_one_section(docx_bytes: bytes) -> None:
    sections = await WordParser(include_image=False).parse(docx_bytes, "report.docx")
    assert texts(sections) == [BEFORE_PICTURE + "\n" + AFTER_PICTURE]


async def test_separate_table_in_json(docx_bytes: bytes) -> None:
    parser = WordParser(separate_table=True, table_format="json", include_image=False)
    sections = await parser.parse(docx_bytes, "report.docx")

    parts = texts(sections)
    assert parts[0] == "# Annual report\nRevenue grew.\tSee the table.\nSecond line\n## Details"
    marker, body = parts[1].split("\n")
    assert marker == "<system-info>A table loaded as a JSON array:</system-info>"
    assert json.loads(body) == [
        ["Sales by region", "", ""],
        ["Region", "Q1", "Q2"],
        ["North", "120", "135"],
    ]
    assert parts[2] == "Before the picture.\n" + AFTER_PICTURE
    assert len(parts) == 3


async def test_empty_paragraphs_are_empty_lines_inside_a_section_only() -> None:
    import io

    from docx import Document

    document = Document()
    for text in ["", " ", "Hello", "", "", "World", "", ""]:
        document.add_paragraph(text)
    document.add_paragraph().add_run().add_picture(io.BytesIO(image_bytes()))
    document.add_paragraph("After")
    saved = io.BytesIO()
    document.save(saved)

    without_pictures = await WordParser(include_image=False).parse(saved.getvalue(), "b.docx")
    # A picture's paragraph is not an empty line, even when the picture is not read.
    assert texts(without_pictures) == ["Hello\n\n\nWorld\n\n\nAfter"]
    with_pictures = await WordParser().parse(saved.getvalue(), "b.docx")
    assert [section.content.type for section in with_pictures] == ["text", "data", "text"]
    assert [text_of(with_pictures[0]), text_of(with_pictures[2])] == ["Hello\n\n\nWorld", "After"]
