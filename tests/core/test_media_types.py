"""Media type detection: the file extension first, then the content's own signature."""

from __future__ import annotations

import io
import mimetypes
import zipfile
from pathlib import Path

import pytest

from ragflow_config.rag._media_types import SNIFF_BYTES, by_extension, detect, normalize, sniff

PPTX = "application/vnd.openxmlformats-officedocument.presentationml.presentation"
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
XLS = "application/vnd.ms-excel"

PDF_BYTES = b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\nendobj\n"
PNG_BYTES = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01"
JPEG_BYTES = b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01"
OLE_BYTES = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 56


def zip_with(*names: str) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        for name in names:
            archive.writestr(name, "<xml/>")
    return buffer.getvalue()


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("notes.md", "text/markdown"),
        ("NOTES.MD", "text/markdown"),
        ("archive.2024/readme.txt", "text/plain"),
        ("data.yml", "application/x-yaml"),
        ("report.pdf", "application/pdf"),
        ("deck.pptx", PPTX),
        ("letter.docx", DOCX),
        ("budget.xlsx", XLSX),
        ("legacy.xls", XLS),
        ("photo.JPG", "image/jpeg"),
        ("no_extension", None),
        ("strange.zzqx", None),
    ],
)
def test_by_extension(filename: str, expected: str | None) -> None:
    assert by_extension(filename) == expected


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (PDF_BYTES, "application/pdf"),
        (PNG_BYTES, "image/png"),
        (JPEG_BYTES, "image/jpeg"),
        (b"GIF89a\x01\x00\x01\x00", "image/gif"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
        (zip_with("ppt/presentation.xml", "ppt/slides/slide1.xml"), PPTX),
        (zip_with("word/document.xml"), DOCX),
        (zip_with("xl/workbook.xml", "xl/worksheets/sheet1.xml"), XLSX),
        (OLE_BYTES, XLS),
        ("Plain text, café, 猫, 😺.\n".encode(), "text/plain"),
        (b"\x00\x01\x02\x03binary\xff\xfe", None),
        (b"\x7fELF\x02\x01\x01\x00\x00\x00", None),
        (b"abc\xff\xfe not utf-8", None),
        (b"ends badly \xff", None),
        (zip_with("mimetype", "content.xml"), None),  # a zip, but not OOXML
        (b"PK\x03\x04 truncated", None),
    ],
)
def test_sniff(data: bytes, expected: str | None) -> None:
    assert sniff(data) == expected


def test_a_character_cut_at_the_sniffing_window_is_still_text() -> None:
    text = ("a" * (SNIFF_BYTES - 1) + "猫" * 10).encode()  # the window ends inside "猫"
    assert sniff(text) == "text/plain"
    # The same truncated character at the true end of the data is not valid UTF-8.
    assert sniff(text[:SNIFF_BYTES]) is None


def test_detect_trusts_the_extension_first_then_the_content() -> None:
    assert detect("report.pdf", b"not really a pdf") == "application/pdf"
    assert detect("scan", PNG_BYTES) == "image/png"
    assert detect("upload.bin.zzqx", zip_with("word/document.xml")) == DOCX
    assert detect("notes", b"just some words") == "text/plain"
    assert detect("blob", b"\x00\x00\x00") is None


@pytest.mark.parametrize("filename", ["notes.rtf", "main.c", "main.h", "schema.sql", "app.ts"])
def test_the_media_type_is_the_same_whatever_the_mimetypes_table_holds(
    filename: str, tmp_path: Path
) -> None:
    """openpyxl's import initialises `mimetypes`; a file must not turn unsupported after it."""
    content = b"{\\rtf1 plain words}\n"
    before = detect(filename, content)
    system_table = tmp_path / "mime.types"
    system_table.write_text(
        "application/rtf rtf\ntext/x-csrc c\ntext/x-chdr h\napplication/sql sql\nvideo/mp2t ts\n"
    )
    mimetypes.init([str(system_table)])
    try:
        assert detect(filename, content) == before == "text/plain"
    finally:
        mimetypes.init()


def test_normalize() -> None:
    assert normalize("Text/HTML; charset=utf-8") == "text/html"
    assert normalize(" application/PDF ") == "application/pdf"
