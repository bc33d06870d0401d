"""WordParser on documents built with python-docx."""

from __future__ import annotations

import json

from ragflow_config.rag import WordParser

from .conftest import bytes_of, image_bytes, text_of, texts

BEFORE_PICTURE = (
    "# Annual report\n"
    "\n"
    "Revenue grew.\tSee the table.\n"
    "Second line\n"
    "\n"
    "## Details\n"
    "\n"
    "| Sales by region |  |  |\n"
    "| --- | --- | --- |\n"
    "| Region | Q1 | Q2 |\n"
    "| North | 120 | 135 |\n"
    "\n"
    "Before the picture."
)
AFTER_PICTURE = "Anchor text.\nBoxed note\n\nInside a content control.\n\nClosing words."


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
    assert texts(sections) == [BEFORE_PICTURE + "\n\n" + AFTER_PICTURE]


async def test_separate_table_in_json(docx_bytes: bytes) -> None:
    parser = WordParser(separate_table=True, table_format="json", include_image=False)
    sections = await parser.parse(docx_bytes, "report.docx")

    parts = texts(sections)
    assert parts[0] == "# Annual report\n\nRevenue grew.\tSee the table.\nSecond line\n\n## Details"
    marker, body = parts[1].split("\n")
    assert marker == "<system-info>A table loaded as a JSON array:</system-info>"
    assert json.loads(body) == [
        ["Sales by region", "", ""],
        ["Region", "Q1", "Q2"],
        ["North", "120", "135"],
    ]
    assert parts[2] == "Before the picture.\n\n" + AFTER_PICTURE
    assert len(parts) == 3
