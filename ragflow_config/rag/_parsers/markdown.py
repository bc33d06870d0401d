"""Markdown files, one section per heading, each knowing the headings it sits under."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from ..._document import Section
from ...message import TextBlock
from .._headings import HEADINGS_KEY, split_by_headings
from .text import TextParser


class MarkdownParser(TextParser):
    """Markdown cut at its headings: one section per heading, in document order.

    Each section holds its heading line and the text up to the next heading
    of level ``max_heading_level`` or above, with
    ``metadata={"headings": [...]}``: the titles of the headings it sits
    under, outermost first (``["Guide", "Install"]`` for an ``## Install``
    under ``# Guide``). Text before the first heading has an empty path; a
    heading with no text of its own before its first sub-heading gives no
    section (its title is in its sub-sections' paths). Headings are found by a
    CommonMark parser: a ``#`` line in a fenced code block is not one, a line
    underlined with ``===`` or ``---`` is. Decoding is the ``text`` parser's.
    """

    supported_media_types: ClassVar[list[str]] = ["text/markdown"]
    requires: ClassVar[dict[str, str]] = {"markdown_it": "documents"}

    class Parameters(TextParser.Parameters):
        max_heading_level: int = Field(
            default=6,
            ge=1,
            le=6,
            description="Cut before headings of this level or above (1 = only `#` headings).",
        )

    parameters: Parameters

    @classmethod
    def supported_extensions(cls) -> list[str]:
        return [".markdown", ".md"]

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        (whole,) = await super().parse(file, filename)
        assert isinstance(whole.content, TextBlock)
        return [
            Section(
                content=TextBlock(text=part.text),
                source=filename,
                metadata={HEADINGS_KEY: part.headings},
            )
            for part in split_by_headings(whole.content.text, self.parameters.max_heading_level)
        ]
