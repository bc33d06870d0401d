"""EPUBParser on small real books built with zipfile: spine order, headings, what is left out."""

from __future__ import annotations

import io
import zipfile

import pytest

from ragflow_config.rag import EPUBParser, ParserError

from .conftest import text_of

CONTAINER = """<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container">
  <rootfiles><rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles>
</container>"""
PACKAGE = """<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
  <metadata xmlns:dc="http://purl.org/dc/elements/1.1/">
    <dc:identifier id="id">urn:test:cats</dc:identifier><dc:title>The Cat Book</dc:title>
  </metadata>
  <manifest>
    <item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
    <item id="c1" href="text/chapter%201.xhtml" media-type="application/xhtml+xml"/>
    <item id="c2" href="text/b.xhtml" media-type="application/xhtml+xml"/>
    <item id="notes" href="text/notes.xhtml" media-type="application/xhtml+xml"/>
    <item id="css" href="style.css" media-type="text/css"/>
  </manifest>
  <spine><itemref idref="nav"/><itemref idref="c2"/><itemref idref="c1"/>
    <itemref idref="notes" linear="no"/></spine>
</package>"""


def page(body: str) -> str:
    return f'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body>{body}</body></html>'


def book(encryption: str | None = None) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("mimetype", "application/epub+zip", compress_type=zipfile.ZIP_STORED)
        archive.writestr("META-INF/container.xml", CONTAINER)
        archive.writestr("OEBPS/content.opf", PACKAGE)
        archive.writestr("OEBPS/nav.xhtml", page("<nav><ol><li>Contents list</li></ol></nav>"))
        # Written before chapter 2, so zip order is not reading order.
        archive.writestr(
            "OEBPS/text/chapter 1.xhtml",
            page("<h1>Sleeping</h1><p>Cats sleep all day.</p><h2>Where</h2><p>On keyboards.</p>"),
        )
        archive.writestr("OEBPS/text/b.xhtml", page("<h1>Eating</h1><p>Cats eat fish.</p>"))
        archive.writestr("OEBPS/text/notes.xhtml", page("<p>Answer key</p>"))
        archive.writestr("OEBPS/style.css", "p { margin: 0 }")
        if encryption is not None:
            archive.writestr("META-INF/encryption.xml", encryption)
    return buffer.getvalue()


async def test_chapters_in_spine_order_cut_at_headings() -> None:
    sections = await EPUBParser().parse(book(), "cats.epub")

    assert [(s.metadata, text_of(s)) for s in sections] == [
        (
            {"headings": ["Eating"], "chapter": 1, "title": "The Cat Book"},
            "# Eating\n\nCats eat fish.",
        ),
        (
            {"headings": ["Sleeping"], "chapter": 2, "title": "The Cat Book"},
            "# Sleeping\n\nCats sleep all day.",
        ),
        (
            {"headings": ["Sleeping", "Where"], "chapter": 2, "title": "The Cat Book"},
            "## Where\n\nOn keyboards.",
        ),
    ]


async def test_obfuscated_fonts_are_fine_but_encrypted_chapters_are_a_parser_error() -> None:
    fonts = '<encryption><CipherReference URI="OEBPS/fonts/a.otf"/></encryption>'
    assert len(await EPUBParser().parse(book(fonts), "cats.epub")) == 3

    drm = '<encryption><CipherReference URI="OEBPS/text/b.xhtml"/></encryption>'
    with pytest.raises(ParserError) as caught:
        await EPUBParser().parse(book(drm), "locked.epub")
    assert caught.value.filename == "locked.epub"
    assert "DRM-protected" in caught.value.cause


async def test_a_zip_that_is_not_a_book_is_a_parser_error() -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("readme.txt", "hello")
    with pytest.raises(ParserError, match=r"not an EPUB book: no META-INF/container.xml"):
        await EPUBParser().parse(buffer.getvalue(), "fake.epub")
    with pytest.raises(ParserError, match=r"not an EPUB book: not a ZIP archive"):
        await EPUBParser().parse(b"plain text", "fake.epub")
