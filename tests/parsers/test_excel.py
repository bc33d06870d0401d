"""ExcelParser on .xlsx workbooks built with openpyxl and the committed .xls."""

from __future__ import annotations

import json
import logging

import pytest

from ragflow_config.rag import ExcelParser, ParserError

from .conftest import bytes_of, fixture_path, image_bytes, text_of

STAFF = (
    "Sheet: Staff\n"
    "| Team roster |  |  |  |\n"
    "| --- | --- | --- | --- |\n"
    "| Name | Age | Joined | Active |\n"
    "| Alice | 25 | 2021-03-01 | TRUE |\n"
    "| Björn | 31.5 | 2019-11-20 08:30:00 | FALSE |\n"
)
NOTES = "Sheet: Notes\n| Note |\n| --- |\n| Pipes \\| and new lines |\n"


async def test_sheets_merge_into_one_section_by_default(xlsx_bytes: bytes) -> None:
    sections = await ExcelParser().parse(xlsx_bytes, "staff.xlsx")

    assert len(sections) == 1
    # One newline between sheets, after the table's own, as in AgentScope.
    assert text_of(sections[0]) == STAFF + "\n" + NOTES
    assert sections[0].metadata == {"sheets": ["Staff", "Notes"]}  # the blank sheet gives nothing
    assert sections[0].source == "staff.xlsx"


async def test_separate_sheets_without_names(xlsx_bytes: bytes) -> None:
    parser = ExcelParser(separate_sheet=True, include_sheet_names=False)
    sections = await parser.parse(xlsx_bytes, "staff.xlsx")

    assert [(text_of(section), section.metadata) for section in sections] == [
        (STAFF.split("\n", 1)[1], {"sheet": "Staff"}),
        (NOTES.split("\n", 1)[1], {"sheet": "Notes"}),
    ]


async def test_cell_coordinates_name_the_real_cells(xlsx_bytes: bytes) -> None:
    sections = await ExcelParser(include_cell_coordinates=True, separate_sheet=True).parse(
        xlsx_bytes, "staff.xlsx"
    )
    assert text_of(sections[0]) == (
        "Sheet: Staff\n"
        "| [A1] Team roster |  |  |  |\n"
        "| --- | --- | --- | --- |\n"
        "| [A2] Name | [B2] Age | [C2] Joined | [E2] Active |\n"
        "| [A3] Alice | [B3] 25 | [C3] 2021-03-01 | [E3] TRUE |\n"
        "| [A5] Björn | [B5] 31.5 | [C5] 2019-11-20 08:30:00 | [E5] FALSE |\n"
    )


async def test_json_is_valid_json_after_the_marker(xlsx_bytes: bytes) -> None:
    sections = await ExcelParser(table_format="json", separate_sheet=True).parse(
        xlsx_bytes, "staff.xlsx"
    )
    name, marker, body = text_of(sections[1]).split("\n")
    assert (name, marker) == (
        "Sheet: Notes",
        "<system-info>A table loaded as a JSON array:</system-info>",
    )
    assert json.loads(body) == [["Note"], ["Pipes | and\nnew lines"]]


@pytest.mark.parametrize("separate_sheet", [False, True])
async def test_pictures_follow_their_sheet_in_anchor_order(
    xlsx_with_images: bytes, separate_sheet: bool
) -> None:
    parser = ExcelParser(include_image=True, separate_sheet=separate_sheet)
    sections = await parser.parse(xlsx_with_images, "staff.xlsx")

    sheet_key = "sheet" if separate_sheet else "sheets"
    assert [section.metadata for section in sections] == [
        {sheet_key: "Staff" if separate_sheet else ["Staff"]},
        {"sheet": "Staff", "cell": "G2", "media_type": "image/png"},
        {"sheet": "Staff", "cell": "B8", "media_type": "image/jpeg"},
        {sheet_key: "Notes" if separate_sheet else ["Notes"]},
    ]
    assert text_of(sections[0]) == STAFF
    assert text_of(sections[3]) == NOTES
    assert [bytes_of(section) for section in sections[1:3]] == [image_bytes(), image_bytes("JPEG")]


async def test_pictures_are_ignored_unless_asked_for(xlsx_with_images: bytes) -> None:
    sections = await ExcelParser().parse(xlsx_with_images, "staff.xlsx")
    assert [type(section.content).__name__ for section in sections] == ["TextBlock"]


async def test_legacy_xls() -> None:
    sections = await ExcelParser().parse(fixture_path("workbook.xls"), "workbook.xls")

    assert [(text_of(section), section.metadata) for section in sections] == [
        (
            "Sheet: Staff\n"
            "| Team roster |  |  |\n"
            "| --- | --- | --- |\n"
            "| Name | Age | Joined |\n"
            "| Alice | 25 | 2021-03-01 |\n"
            "| Björn | 31.5 | 2019-11-20 |\n"
            "\n"
            "Sheet: Notes\n"
            "| Note |\n"
            "| --- |\n"
            "| Überstunden werden quartalsweise abgerechnet. |\n",
            {"sheets": ["Staff", "Notes"]},
        )
    ]


async def test_pictures_of_a_legacy_xls_are_not_read(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ragflow_config.parsers"):
        sections = await ExcelParser(include_image=True).parse(
            fixture_path("workbook.xls"), "workbook.xls"
        )
    assert len(sections) == 1
    assert "workbook.xls: pictures are not read from legacy .xls files" in caplog.text


async def test_a_password_protected_workbook_is_a_parser_error() -> None:
    with pytest.raises(ParserError) as caught:
        await ExcelParser().parse(fixture_path("encrypted.xlsx"), "secret.xlsx")
    assert caught.value.filename == "secret.xlsx"
    assert "password-protected" in caught.value.cause
