"""EPUB books: the chapters in reading order, each read as the ``html`` parser reads a page."""

from __future__ import annotations

import posixpath
import zipfile
from io import BytesIO
from typing import Any, ClassVar
from urllib.parse import unquote
from xml.etree import ElementTree

from pydantic import Field

from ..._component import ComponentParameters
from ..._document import Section
from ..._errors import ParserError
from ...message import TextBlock
from .._headings import HEADINGS_KEY, split_by_headings
from .base import ParserBase
from .html import HTMLParser

_CONTAINER = "META-INF/container.xml"
_NS = {
    "container": "urn:oasis:names:tc:opendocument:xmlns:container",
    "opf": "http://www.idpf.org/2007/opf",
    "dc": "http://purl.org/dc/elements/1.1/",
}
_DOCUMENTS = {"application/xhtml+xml", "text/html"}


class EPUBParser(ParserBase):
    """EPUB 2 and 3 books, chapter by chapter in the spine's reading order.

    Each chapter (an XHTML document of the spine) is read as the ``html``
    parser reads a page (its content as Markdown, navigation left out) and
    cut at its headings: one section per heading with
    ``metadata={"headings": [...], "chapter": n, "title": <book title>}``,
    ``n`` counting the spine's documents from 1. The EPUB 3 navigation
    document and spine items marked ``linear="no"`` (pop-ups, answer keys) are
    left out. The book is read with the standard library's ``zipfile`` and
    XML parser; a DRM-protected book (``META-INF/encryption.xml`` naming
    chapters) or a ZIP without an EPUB package raises :class:`ParserError`.
    """

    supported_media_types: ClassVar[list[str]] = ["application/epub+zip"]
    requires: ClassVar[dict[str, str]] = {"selectolax": "documents", "markdown_it": "documents"}

    class Parameters(ComponentParameters):
        max_heading_level: int = Field(
            default=6, ge=1, le=6, description="Cut before headings of this level or above."
        )

    parameters: Parameters

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [".epub"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        data = self.read_bytes(file, filename)
        try:
            book = zipfile.ZipFile(BytesIO(data))
        except Exception as exc:  # BadZipFile, or NotImplementedError, ValueError, ... if damaged
            raise ParserError(
                filename, f"not an EPUB book: not a ZIP archive ({_reason(exc)})"
            ) from None
        with book:
            try:
                return self._sections(book, filename)
            except (ElementTree.ParseError, LookupError) as exc:  # LookupError: an XML
                # declaration naming an encoding Python does not know
                raise ParserError(filename, f"damaged EPUB book: {exc}") from None

    def _sections(self, book: zipfile.ZipFile, filename: str) -> list[Section]:
        names = set(book.namelist())
        if _CONTAINER not in names:
            raise ParserError(filename, f"not an EPUB book: no {_CONTAINER}")
        container = ElementTree.fromstring(_read(book, _CONTAINER, filename))
        rootfile = container.find(".//container:rootfile", _NS)
        if rootfile is None or not rootfile.get("full-path"):
            raise ParserError(filename, f"not an EPUB book: {_CONTAINER} names no package")
        package_path = rootfile.get("full-path", "")
        package = ElementTree.fromstring(_read(book, package_path, filename))
        folder = posixpath.dirname(package_path)
        title = _text(package.find(".//dc:title", _NS))
        manifest: dict[str, tuple[str, str, str]] = {}
        for item in package.iterfind(".//opf:manifest/opf:item", _NS):
            href = posixpath.normpath(posixpath.join(folder, unquote(item.get("href", ""))))
            manifest[item.get("id", "")] = (
                href,
                item.get("media-type", ""),
                item.get("properties", ""),
            )
        chapters = [
            manifest[ref.get("idref", "")]
            for ref in package.iterfind(".//opf:spine/opf:itemref", _NS)
            if ref.get("linear", "yes") != "no" and ref.get("idref", "") in manifest
        ]
        _refuse_encrypted(book, names, {href for href, _, _ in chapters}, filename)
        reader = HTMLParser(main_content="markup")  # a chapter is all content, no boilerplate
        sections: list[Section] = []
        number = 0
        for href, media_type, properties in chapters:
            if media_type not in _DOCUMENTS or "nav" in properties.split():
                continue
            number += 1
            text, _ = reader.to_markdown(_read(book, href, filename), filename)
            metadata: dict[str, Any] = {"chapter": number}
            if title:
                metadata["title"] = title
            sections.extend(
                Section(
                    content=TextBlock(text=part.text),
                    source=filename,
                    metadata={HEADINGS_KEY: part.headings, **metadata},
                )
                for part in split_by_headings(text, self.parameters.max_heading_level)
            )
        return sections


def _refuse_encrypted(
    book: zipfile.ZipFile, names: set[str], chapters: set[str], filename: str
) -> None:
    if "META-INF/encryption.xml" not in names:
        return
    encryption = _read(book, "META-INF/encryption.xml", filename).decode("utf-8", "replace")
    # Obfuscated fonts are listed here too; only encrypted chapters make the text unreadable.
    if any(chapter in encryption for chapter in chapters):
        raise ParserError(filename, "the EPUB book is DRM-protected: its chapters are encrypted")


def _read(book: zipfile.ZipFile, name: str, filename: str) -> bytes:
    """The member ``name`` of the book, or a ParserError saying why it cannot be read."""
    try:
        return book.read(name)
    except KeyError:
        raise ParserError(filename, f"damaged EPUB book: no {name} in the archive") from None
    except Exception as exc:  # zipfile reports damage with many exception types
        raise ParserError(
            filename, f"damaged EPUB book: {name} cannot be read ({_reason(exc)})"
        ) from None


def _reason(exc: Exception) -> str:
    return str(exc) or type(exc).__name__


def _text(element: ElementTree.Element | None) -> str:
    return " ".join((element.text or "").split()) if element is not None else ""
