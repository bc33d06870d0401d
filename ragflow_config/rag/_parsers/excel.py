"""Excel workbooks (.xlsx via openpyxl, .xls via xlrd), sheet by sheet."""

from __future__ import annotations

import datetime
import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pydantic import Field

from ..._component import ComponentParameters
from ..._document import Section
from ..._errors import ParserError
from ..._extras import require
from ...message import DataBlock, TextBlock
from .._media_types import sniff_image
from ._content import damaged, expect_media_type, password_protected
from ._tables import TABLE_FORMAT_DESCRIPTION, TableFormat, render_table
from .base import ParserBase

logger = logging.getLogger("ragflow_config.parsers")

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
XLS = "application/vnd.ms-excel"


@dataclass
class _Image:
    cell: str
    data: bytes
    media_type: str


@dataclass
class _Sheet:
    name: str
    rows: list[list[str]]
    images: list[_Image] = field(default_factory=list)


class ExcelParser(ParserBase):
    """Excel workbooks: .xlsx (openpyxl) and legacy .xls (xlrd), sheet by sheet.

    Each sheet is one table in ``table_format`` (see ``_tables``); its first
    non-empty row is the header. With ``include_sheet_names`` the table is
    preceded by a ``Sheet: <name>`` line::

        Sheet: Staff
        | Name | Age |
        | --- | --- |
        | Alice | 25 |

    Cells show their stored value (for a formula, the result Excel last saved),
    not their number format: whole numbers without ``.0``, other numbers as
    Python writes them, dates as ``2021-03-01`` (``2021-03-01 08:30:00`` with a
    time), booleans as ``TRUE``/``FALSE``, errors as Excel writes them
    (``#DIV/0!``). A merged range shows its value once, in its top-left cell,
    as Excel stores it; repeating it in every cell would invent data. Rows and
    columns with no value are dropped. ``include_cell_coordinates`` labels each
    non-empty cell with its real address (``[A1] Name``, or a JSON object per
    row), so the labels stay right after empty rows and columns are dropped.
    Sheets with no value give no text.

    ``separate_sheet`` gives one text section per sheet with
    ``metadata={"sheet": name}``. Otherwise consecutive sheets share one text
    section, their blocks joined with ``\\n``, with
    ``metadata={"sheets": [names]}``.

    ``include_image`` (.xlsx only; ignored for .xls) emits each picture as
    ``DataBlock.from_bytes(image, media_type, name=filename)`` with
    ``metadata={"sheet": name, "cell": "B3", "media_type": ...}`` (the cell is
    its top-left anchor), after its sheet's text, pictures ordered by anchor,
    so sheet order holds in both modes. Pictures need openpyxl's full
    (not read-only) load, which holds the whole workbook in memory; without
    ``include_image`` .xlsx files are streamed in read-only mode.
    """

    supported_media_types: ClassVar[list[str]] = [XLSX, XLS]
    requires: ClassVar[dict[str, str]] = {"openpyxl": "rag", "xlrd": "rag"}

    class Parameters(ComponentParameters):
        include_sheet_names: bool = Field(
            default=True, description="Write `Sheet: <name>` before each sheet's table."
        )
        include_cell_coordinates: bool = Field(
            default=False, description="Label every non-empty cell with its address, as [A1]."
        )
        include_image: bool = Field(
            default=False,
            description="Emit pictures as image sections (.xlsx only; loads the whole "
            "workbook into memory instead of streaming it).",
        )
        separate_sheet: bool = Field(
            default=False, description="One text section per sheet instead of one for all."
        )
        table_format: TableFormat = Field(default="markdown", description=TABLE_FORMAT_DESCRIPTION)

    parameters: Parameters

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [".xls", ".xlsx"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = self.read_bytes(file, filename)
        media_type = expect_media_type(data, filename, "Excel", self.supported_media_types)
        include_image = self.parameters.include_image
        if media_type == XLSX:
            sheets = _xlsx_sheets(require("openpyxl", "rag"), data, include_image)
        else:
            if include_image:
                logger.warning("%s: pictures are not read from legacy .xls files", filename)
            sheets = _xls_sheets(require("xlrd", "rag"), data, filename)
        try:
            return self._sections(sheets, filename)
        except ParserError:
            raise
        except Exception as exc:  # openpyxl and xlrd report damage with many exception types
            raise damaged(filename, "Excel", exc) from exc

    def _sections(self, sheets: Iterator[_Sheet], filename: str) -> list[Section]:
        sections: list[Section] = []
        merged_texts: list[str] = []
        merged_names: list[str] = []

        def flush_merged() -> None:
            if merged_texts:
                text = "\n".join(merged_texts)
                metadata = {"sheets": list(merged_names)}
                sections.append(
                    Section(content=TextBlock(text=text), source=filename, metadata=metadata)
                )
                merged_texts.clear()
                merged_names.clear()

        for sheet in sheets:
            text = self._sheet_text(sheet)
            if text and self.parameters.separate_sheet:
                metadata = {"sheet": sheet.name}
                sections.append(
                    Section(content=TextBlock(text=text), source=filename, metadata=metadata)
                )
            elif text:
                merged_texts.append(text)
                merged_names.append(sheet.name)
            if sheet.images:
                flush_merged()
                sections.extend(
                    _image_section(image, sheet.name, filename) for image in sheet.images
                )
        flush_merged()
        return sections

    def _sheet_text(self, sheet: _Sheet) -> str:
        coordinates = (
            [
                [f"{column_letters(column)}{row}" for column in range(1, len(cells) + 1)]
                for row, cells in enumerate(sheet.rows, start=1)
            ]
            if self.parameters.include_cell_coordinates
            else None
        )
        table = render_table(sheet.rows, self.parameters.table_format, coordinates)
        if table and self.parameters.include_sheet_names:
            return f"Sheet: {sheet.name}\n{table}"
        return table


def _image_section(image: _Image, sheet: str, filename: str) -> Section:
    return Section(
        content=DataBlock.from_bytes(image.data, image.media_type, name=filename),
        source=filename,
        metadata={"sheet": sheet, "cell": image.cell, "media_type": image.media_type},
    )


def _xlsx_sheets(openpyxl: Any, data: bytes, include_image: bool) -> Iterator[_Sheet]:
    workbook = openpyxl.load_workbook(io.BytesIO(data), read_only=not include_image, data_only=True)
    try:
        for worksheet in workbook.worksheets:
            if not include_image:
                # Trust the stored rows, not the declared size, which may be wrong or huge.
                worksheet.reset_dimensions()
            rows = [
                [cell_text(value) for value in row] for row in worksheet.iter_rows(values_only=True)
            ]
            images = _xlsx_images(worksheet) if include_image else []
            yield _Sheet(worksheet.title, rows, images)
    finally:
        workbook.close()


def _xlsx_images(worksheet: Any) -> list[_Image]:
    # openpyxl keeps a sheet's pictures only in private attributes; there is no public API.
    images: list[tuple[tuple[int, int], _Image]] = []
    for picture in worksheet._images:
        anchor = getattr(picture.anchor, "_from", None)
        row, column = (anchor.row, anchor.col) if anchor is not None else (0, 0)
        blob: bytes = picture._data()
        media_type = sniff_image(blob) or f"image/{picture.format}"
        cell = f"{column_letters(column + 1)}{row + 1}"
        images.append(((row, column), _Image(cell, blob, media_type)))
    return [image for _, image in sorted(images, key=lambda item: item[0])]


def _xls_sheets(xlrd: Any, data: bytes, filename: str) -> Iterator[_Sheet]:
    try:
        # xlrd prints its warnings to stdout unless given somewhere else to write them.
        book = xlrd.open_workbook(file_contents=data, on_demand=True, logfile=io.StringIO())
    except xlrd.XLRDError as exc:
        if "encrypted" in str(exc).lower():
            raise password_protected(filename, "Excel") from exc
        raise
    try:
        for index in range(book.nsheets):
            sheet = book.sheet_by_index(index)
            rows = [
                [cell_text(_xls_value(cell, book.datemode, xlrd)) for cell in sheet.row(row)]
                for row in range(sheet.nrows)
            ]
            yield _Sheet(sheet.name, rows)
            book.unload_sheet(index)
    finally:
        book.release_resources()


def _xls_value(cell: Any, datemode: int, xlrd: Any) -> object:
    if cell.ctype == xlrd.XL_CELL_DATE:
        return xlrd.xldate.xldate_as_datetime(cell.value, datemode)
    if cell.ctype == xlrd.XL_CELL_BOOLEAN:
        return bool(cell.value)
    if cell.ctype == xlrd.XL_CELL_ERROR:
        return xlrd.error_text_from_code.get(cell.value, "#ERROR")
    return cell.value


def cell_text(value: object) -> str:
    """A cell value as text; see the class docstring for the rules."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    if isinstance(value, datetime.datetime):
        if value.time() == datetime.time():
            return value.date().isoformat()
        return value.isoformat(sep=" ")
    if isinstance(value, datetime.date | datetime.time):
        return value.isoformat()
    return str(value)


def column_letters(column: int) -> str:
    """Excel's name for a 1-based column number: 1 -> A, 27 -> AA."""
    letters = ""
    while column:
        column, remainder = divmod(column - 1, 26)
        letters = chr(ord("A") + remainder) + letters
    return letters
