"""What every binary parser promises: clear errors, strict options, statelessness."""

from __future__ import annotations

import errno
import io
import pickle
import subprocess
import sys
import zipfile
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from pydantic import ValidationError

import ragflow_config.rag as rag
from ragflow_config._errors import MissingExtraError, ParserError
from ragflow_config.rag import (
    ExcelParser,
    ImageParser,
    ParserBase,
    PDFParser,
    PPTParser,
    WordParser,
)

from .conftest import build_docx, build_pptx, build_xlsx, fixture_path, image_bytes, texts

PARSERS: list[type[ParserBase]] = [PDFParser, PPTParser, WordParser, ExcelParser, ImageParser]


def committed(name: str) -> bytes:
    return Path(fixture_path(name)).read_bytes()


@pytest.mark.parametrize(
    ("parser", "make_data", "filename", "cause"),
    [
        (PDFParser, lambda: committed("report.pdf"), "report.pdf", "damaged PDF file"),
        (PPTParser, build_pptx, "deck.pptx", "damaged PowerPoint file"),
        (WordParser, build_docx, "report.docx", "damaged Word file"),
        (ExcelParser, build_xlsx, "book.xlsx", "damaged Excel file"),
        (ExcelParser, lambda: committed("workbook.xls"), "book.xls", "damaged Excel file"),
        (ImageParser, lambda: image_bytes(size=(64, 64)), "photo.png", "damaged image/png file"),
    ],
)
async def test_a_truncated_file_is_a_parser_error_naming_it(
    parser: type[ParserBase], make_data: Callable[[], bytes], filename: str, cause: str
) -> None:
    data = make_data()
    with pytest.raises(ParserError) as caught:
        await parser().parse(data[: len(data) // 2], filename)
    assert caught.value.filename == filename
    assert str(caught.value).startswith(f"{filename}: {cause}")
    assert "truncated" in caught.value.cause


@pytest.mark.parametrize(
    ("parser", "make_data", "message"),
    [
        (PDFParser, image_bytes, "not a PDF file: the content is image/png"),
        (
            PPTParser,
            build_docx,
            "not a PowerPoint file: the content is "
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        (
            WordParser,
            lambda: committed("workbook.xls"),
            "not a Word file: the content is a legacy binary Office file (.doc, .xls or .ppt)",
        ),
        (
            ExcelParser,
            lambda: committed("report.pdf"),
            "not an Excel file: the content is application/pdf",
        ),
        (
            ImageParser,
            lambda: committed("report.pdf"),
            "not a supported image file: the content is application/pdf",
        ),
    ],
)
async def test_a_mislabelled_file_says_what_it_really_is(
    parser: type[ParserBase], make_data: Callable[[], bytes], message: str
) -> None:
    with pytest.raises(ParserError) as caught:
        await parser().parse(make_data(), "upload.bin")
    assert str(caught.value) == f"upload.bin: {message}"


@pytest.mark.parametrize("parser", [PPTParser, WordParser, ExcelParser])
async def test_a_password_protected_office_file_says_so(parser: type[ParserBase]) -> None:
    with pytest.raises(ParserError, match="password-protected"):
        await parser().parse(committed("encrypted.xlsx"), "secret")


@pytest.mark.parametrize("parser", PARSERS)
async def test_a_missing_path_is_a_parser_error(parser: type[ParserBase], tmp_path: Path) -> None:
    with pytest.raises(ParserError, match="no such file"):
        await parser().parse(str(tmp_path / "missing"), "missing")


@pytest.mark.parametrize("parser", PARSERS)
async def test_a_missing_path_is_also_a_file_not_found_error(
    parser: type[ParserBase], tmp_path: Path
) -> None:
    # AgentScope's binary parsers raise FileNotFoundError; code written for them still works.
    missing = str(tmp_path / "missing.bin")
    with pytest.raises(FileNotFoundError) as caught:
        await parser().parse(missing, "missing.bin")
    error = caught.value
    assert isinstance(error, ParserError)
    assert (error.errno, error.filename, str(error)) == (
        errno.ENOENT,
        "missing.bin",
        f"missing.bin: no such file: {missing}",
    )
    assert str(pickle.loads(pickle.dumps(error))) == str(error)


@pytest.mark.parametrize("parser", PARSERS)
def test_parameters_reject_unknown_keys(parser: type[ParserBase]) -> None:
    schema = parser.Parameters.model_json_schema()
    assert schema["additionalProperties"] is False
    assert all("description" in field for field in schema.get("properties", {}).values())
    with pytest.raises(ValidationError, match="extra_field"):
        parser(extra_field=1)


@pytest.mark.parametrize("parser", [PPTParser, WordParser])
async def test_a_path_and_its_bytes_parse_the_same(
    parser: type[ParserBase], tmp_path: Path
) -> None:
    data = build_pptx() if parser is PPTParser else build_docx()
    path = tmp_path / "file"
    path.write_bytes(data)
    from_path = await parser(include_image=False).parse(str(path), "f")
    from_bytes = await parser(include_image=False).parse(data, "f")
    assert texts(from_path) == texts(from_bytes)


async def test_parsers_survive_pickling_for_worker_processes(xlsx_bytes: bytes) -> None:
    parser = ExcelParser(separate_sheet=True, table_format="json")
    copy = pickle.loads(pickle.dumps(parser))
    assert copy.parameters == parser.parameters
    original = await parser.parse(xlsx_bytes, "book.xlsx")
    restored = await copy.parse(xlsx_bytes, "book.xlsx")
    assert texts(restored) == texts(original)


def test_entry_points_name_these_classes() -> None:
    loaded = {entry.name: entry.load() for entry in entry_points(group="ragflow_config.parsers")}
    assert {name: loaded[name] for name in ("pdf", "pptx", "docx", "excel", "image")} == {
        "pdf": PDFParser,
        "pptx": PPTParser,
        "docx": WordParser,
        "excel": ExcelParser,
        "image": ImageParser,
    }
    assert rag.ParserError is ParserError


def test_curated_extensions() -> None:
    assert {parser.__name__: parser.supported_extensions() for parser in PARSERS} == {
        "PDFParser": [".pdf"],
        "PPTParser": [".pptx"],
        "WordParser": [".docx"],
        "ExcelParser": [".xls", ".xlsx"],
        "ImageParser": [".bmp", ".gif", ".jpeg", ".jpg", ".png", ".webp"],
    }
    assert ImageParser.supported_media_types == [
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/bmp",
        "image/webp",
    ]


def test_parser_modules_import_without_their_libraries() -> None:
    code = (
        "import sys\n"
        "for name in ('pdfplumber', 'pdfminer', 'pptx', 'docx', 'openpyxl', 'xlrd', 'PIL'):\n"
        "    sys.modules[name] = None\n"
        "from ragflow_config.rag import ExcelParser, ImageParser, PDFParser, PPTParser, WordParser\n"
        "for parser in (ExcelParser, ImageParser, PDFParser, PPTParser, WordParser):\n"
        "    parser()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    ("parser", "make_data", "library"),
    [
        (PDFParser, lambda: committed("report.pdf"), "pdfplumber"),
        (PDFParser, lambda: committed("report.pdf"), "pypdfium2"),
        (PPTParser, build_pptx, "pptx"),
        (WordParser, build_docx, "docx"),
        (ExcelParser, build_xlsx, "openpyxl"),
        (ExcelParser, lambda: committed("workbook.xls"), "xlrd"),
        (ImageParser, image_bytes, "PIL.Image"),
    ],
)
async def test_a_missing_library_names_the_extra(
    parser: type[ParserBase],
    make_data: Callable[[], bytes],
    library: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    data = make_data()
    monkeypatch.setitem(sys.modules, library, None)
    with pytest.raises(MissingExtraError, match=r"ragflow-config\[rag\]"):
        await parser().parse(data, "file")


def with_broken_part(data: bytes, part: str) -> bytes:
    """The same ZIP container with one XML part cut short."""
    source = zipfile.ZipFile(io.BytesIO(data))
    output = io.BytesIO()
    with zipfile.ZipFile(output, "w") as target:
        for item in source.infolist():
            content = source.read(item)
            target.writestr(
                item, content[: len(content) // 2] if item.filename == part else content
            )
    return output.getvalue()


@pytest.mark.parametrize(
    ("parser", "make_data", "part", "kind"),
    [
        (PPTParser, build_pptx, "ppt/slides/slide1.xml", "PowerPoint"),
        (WordParser, build_docx, "word/document.xml", "Word"),
        (ExcelParser, build_xlsx, "xl/worksheets/sheet1.xml", "Excel"),
    ],
)
async def test_a_broken_xml_part_is_a_parser_error(
    parser: type[ParserBase], make_data: Callable[[], bytes], part: str, kind: str
) -> None:
    with pytest.raises(
        ParserError, match=rf"^broken: damaged {kind} file \(truncated or corrupt\)"
    ):
        await parser().parse(with_broken_part(make_data(), part), "broken")
