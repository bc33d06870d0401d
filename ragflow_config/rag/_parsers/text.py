"""Plain-text formats: the whole file as one section."""

from __future__ import annotations

import codecs
import os
from typing import ClassVar, Literal

from pydantic import Field, field_validator

from ..._component import ComponentParameters
from ..._document import Section
from ..._errors import ParserError
from ...message import TextBlock
from .base import ParserBase


class TextParser(ParserBase):
    """Text, Markdown, CSV, HTML, reStructuredText, JSON, XML and YAML files.

    The whole file becomes one section; the chunker splits it.

    ``file`` as ``bytes`` is decoded with ``encoding``. A ``str`` that names an
    existing file is read and decoded; any other ``str`` is taken as the text
    itself. Bytes that do not decode raise :class:`ParserError` naming the file,
    unless ``errors`` is ``"replace"`` (U+FFFD for each bad byte) or ``"ignore"``.
    """

    supported_media_types: ClassVar[list[str]] = [
        "text/plain",
        "text/markdown",
        "text/csv",
        "text/html",
        "text/x-rst",
        "application/json",
        "application/xml",
        "application/x-yaml",
        # Typed by extension so the structured parsers can claim them; still text here.
        "application/x-ndjson",
        "application/xhtml+xml",
        "message/rfc822",
    ]

    class Parameters(ComponentParameters):
        encoding: str = Field(default="utf-8", description="Text encoding of the files.")
        errors: Literal["strict", "replace", "ignore"] = Field(
            default="strict",
            description="What to do with bytes that do not decode: fail, replace them "
            "with U+FFFD, or drop them.",
        )

        @field_validator("encoding")
        @classmethod
        def _known_encoding(cls, value: str) -> str:
            try:
                # Unlike codecs.lookup, this also rejects codecs that are not text
                # encodings (base64, rot13), which would otherwise fail at parse time.
                "".encode(value)
            except LookupError:
                raise ValueError(f"unknown text encoding {value!r}") from None
            return value

    parameters: Parameters

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [
            ".csv",
            ".eml",
            ".htm",
            ".html",
            ".json",
            ".jsonl",
            ".markdown",
            ".md",
            ".ndjson",
            ".rst",
            ".txt",
            ".xhtml",
            ".xml",
            ".yaml",
            ".yml",
        ]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        if isinstance(file, str) and not os.path.isfile(file):
            text = file
        else:
            text = self.decode(self.read_bytes(file, filename), filename)
        return [Section(content=TextBlock(text=text), source=filename, metadata={})]

    def decode(self, data: bytes, filename: str) -> str:
        encoding = self.parameters.encoding
        if data.startswith(codecs.BOM_UTF8) and codecs.lookup(encoding).name == "utf-8":
            data = data[len(codecs.BOM_UTF8) :]
        try:
            return data.decode(encoding, errors=self.parameters.errors)
        except UnicodeDecodeError as exc:
            raise ParserError(
                filename,
                f"not valid {encoding} at byte {exc.start} ({exc.reason}); set the text "
                f"parser's `encoding`, or `errors: replace` to keep going",
            ) from None
