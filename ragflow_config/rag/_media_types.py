"""Media type detection: by file extension first, then by the file's first bytes.

A pure function of the file's name and content. The standard library's
``mimetypes`` table is not consulted: it changes when any library calls
``mimetypes.init()`` (openpyxl does, on import) and from one machine's
``/etc/mime.types`` to another's, so a file would be indexed or not
depending on what ran before it.
"""

from __future__ import annotations

import codecs
import zipfile
from io import BytesIO
from pathlib import PurePath

# The types the built-in parsers route on; any other file is judged by its content.
_BY_EXTENSION = {
    ".md": "text/markdown",
    ".markdown": "text/markdown",
    ".rst": "text/x-rst",
    ".txt": "text/plain",
    ".csv": "text/csv",
    ".htm": "text/html",
    ".html": "text/html",
    ".json": "application/json",
    ".jsonl": "application/x-ndjson",
    ".ndjson": "application/x-ndjson",
    ".xhtml": "application/xhtml+xml",
    ".eml": "message/rfc822",
    ".epub": "application/epub+zip",
    ".xml": "application/xml",
    ".yaml": "application/x-yaml",
    ".yml": "application/x-yaml",
    ".pdf": "application/pdf",
    ".pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    ".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    ".xls": "application/vnd.ms-excel",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".gif": "image/gif",
    ".bmp": "image/bmp",
    ".webp": "image/webp",
}

_OOXML_BY_PART = {
    "ppt/": _BY_EXTENSION[".pptx"],
    "word/": _BY_EXTENSION[".docx"],
    "xl/": _BY_EXTENSION[".xlsx"],
}

# How many leading bytes `sniff` needs to see.
SNIFF_BYTES = 4096


def normalize(media_type: str) -> str:
    """``Text/HTML; charset=utf-8`` -> ``text/html``."""
    return media_type.split(";", 1)[0].strip().lower()


def by_extension(filename: str) -> str | None:
    suffix = PurePath(filename).suffix.lower()
    if not suffix:
        return None
    return _BY_EXTENSION.get(suffix)


def sniff_image(head: bytes) -> str | None:
    """The image media type its magic bytes declare, or ``None`` if it is not a known image."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head.startswith(b"BM") and len(head) >= 14:
        return "image/bmp"
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def sniff(data: bytes) -> str | None:
    """The media type the content itself declares, or ``None`` when it says nothing."""
    head = data[:SNIFF_BYTES]
    if head.startswith(b"%PDF-"):
        return "application/pdf"
    image = sniff_image(head)
    if image:
        return image
    if head.startswith(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1") or _is_biff_stream(head):
        return "application/vnd.ms-excel"  # OLE2 or bare BIFF; the only legacy Office type we parse
    if head.startswith(b"PK\x03\x04"):
        try:
            with zipfile.ZipFile(BytesIO(data)) as archive:
                names = archive.namelist()
        except Exception:  # a damaged archive: BadZipFile, NotImplementedError, ValueError, ...
            return None
        for prefix, media_type in _OOXML_BY_PART.items():
            if any(name.startswith(prefix) for name in names):
                return media_type
        return None
    if b"\x00" not in head:
        # Unless the window holds all the data, a character cut by its end is still text.
        decoder = codecs.getincrementaldecoder("utf-8")()
        try:
            decoder.decode(head, final=len(data) <= len(head))
        except UnicodeDecodeError:
            return None
        return "text/plain"
    return None


# Excel 2.x-4.0 (and some 5.0 writers) save a bare BIFF stream, not an OLE2 container:
# it opens with a BOF record, whose opcode and length xlrd checks the same way.
_BIFF_BOF_OPCODES = (0x0009, 0x0209, 0x0409, 0x0809)


def _is_biff_stream(head: bytes) -> bool:
    if len(head) < 8:
        return False
    opcode, length = int.from_bytes(head[0:2], "little"), int.from_bytes(head[2:4], "little")
    return opcode in _BIFF_BOF_OPCODES and 4 <= length <= 20


def detect(filename: str, data: bytes) -> str | None:
    """Extension first, then content sniffing."""
    return by_extension(filename) or sniff(data)
