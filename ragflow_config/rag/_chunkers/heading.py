"""A chunker that follows Markdown headings and counts with the model's tokenizer."""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field

from ..._component import ComponentParameters
from ..._document import Chunk, Section
from ...message import DataBlock, TextBlock
from .._headings import HEADINGS_KEY, split_by_headings
from ._tables import repeat_table_headers
from ._tokens import TokenCounter, TokenParameters
from .base import ChunkerBase

PATH_SEPARATOR = " > "


class HeadingChunker(ChunkerBase):
    """Chunks that never cross a heading and know the headings they sit under.

    Each text section is cut before every Markdown heading of level
    ``max_heading_level`` or above (found by a CommonMark parser, so ``#`` in
    code is not one); each part is then cut to ``chunk_size`` word pieces of
    the embedding model's tokenizer (counted as the ``token`` chunker counts,
    special tokens included) at its largest Markdown units that fit
    (semantic-text-splitter's ``MarkdownSplitter``: sections, code blocks,
    lists, paragraphs, sentences, words). Every chunk's
    ``metadata["headings"]`` is its heading path, outermost first, continuing
    the section's own path (from the ``markdown`` or ``html`` parser) when it
    has one. With ``prepend_headings`` each chunk's text starts with its path
    (``Guide > Install``) and a blank line, inside the size, so the embedding
    sees where the text sits. Works after the ``text`` parser as well:
    Markdown read as flat text is cut at its headings here. ``DataBlock``
    sections pass through whole.
    """

    chunker_type: ClassVar[str] = "heading"
    requires: ClassVar[dict[str, str]] = {
        "semantic_text_splitter": "documents",
        "tokenizers": "documents",
        "markdown_it": "documents",
    }

    class Parameters(TokenParameters):
        max_heading_level: int = Field(
            default=6, ge=1, le=6, description="Cut before headings of this level or above."
        )
        prepend_headings: bool = Field(
            default=False,
            description="Start each chunk's text with its heading path (`A > B`) and a blank line.",
        )

    parameters: Parameters

    def __init__(self, parameters: ComponentParameters | None = None, **options: Any) -> None:
        super().__init__(parameters, **options)
        self.counter = TokenCounter(self.parameters)

    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        chunks: list[Chunk] = []
        for section in sections:
            if not isinstance(section.content, TextBlock):
                chunks.append(_chunk(section.content, section, dict(section.metadata)))
                continue
            base = list(section.metadata.get(HEADINGS_KEY) or [])
            for part in split_by_headings(section.content.text, self.parameters.max_heading_level):
                path = _join(base, part.headings)
                metadata = {**section.metadata, HEADINGS_KEY: path}
                for piece in self._pieces(part.text, path):
                    chunks.append(_chunk(TextBlock(text=piece), section, metadata))
        return self.number(chunks)

    def _pieces(self, text: str, path: list[str]) -> list[str]:
        budget = self.counter.budget
        prefix = ""
        if self.parameters.prepend_headings and path:
            prefix = PATH_SEPARATOR.join(path) + "\n\n"
            # A path that would leave less than half the chunk for text is left out.
            if self.counter.count(prefix) * 2 > budget:
                prefix = ""
        capacity = budget - (self.counter.count(prefix) if prefix else 0)
        splitter = self.counter.splitter("markdown", capacity)
        text = repeat_table_headers(text, self.counter.count, capacity)
        return [prefix + piece for piece in splitter.chunks(text) if piece.strip()]


def _join(base: list[str], inner: list[str]) -> list[str]:
    """``base`` continued by ``inner``, the heading they share (the section's own) once."""
    if base and inner and inner[0] == base[-1]:
        return base + inner[1:]
    return base + inner


def _chunk(content: TextBlock | DataBlock, section: Section, metadata: dict[str, Any]) -> Chunk:
    return Chunk(
        content=content,
        source=section.source,
        chunk_index=0,
        total_chunks=0,
        metadata=metadata,
    )
