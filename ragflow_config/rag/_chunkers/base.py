"""The chunker interface: ``Section``s in, the ``Chunk``s to index out."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Callable
from typing import ClassVar

from ..._component import Component, ComponentParameters
from ..._document import Chunk, Section
from ...message import DataBlock, TextBlock
from ._tables import repeat_table_headers


class ChunkerBase(Component):
    """Cuts sections into chunks.

    Conventions every chunker keeps: never merge across sections; a
    ``DataBlock`` section passes through as one chunk; empty text yields no
    chunk; ``chunk_index`` runs 0..N-1 over the result and every chunk has
    ``total_chunks == N``; ``source`` and ``metadata`` come from the section.
    ``chunker_type`` names the strategy and is unique within an application.
    """

    chunker_type: ClassVar[str]

    class Parameters(ComponentParameters):
        pass

    @abstractmethod
    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        """Cut ``sections`` into chunks."""

    @staticmethod
    def number(chunks: list[Chunk]) -> list[Chunk]:
        """Set ``chunk_index`` 0..N-1 and ``total_chunks`` N on every chunk."""
        for index, chunk in enumerate(chunks):
            chunk.chunk_index = index
            chunk.total_chunks = len(chunks)
        return chunks


class SplittingChunker(ChunkerBase):
    """A chunker that cuts each text section's text into pieces, one chunk a piece.

    Subclasses say how to cut, in :meth:`split`, and how they measure, in :meth:`measure`;
    the conventions above are kept here, and a Markdown table larger than a chunk is cut
    into tables that each repeat its header row (``_tables``) before the text is split.
    """

    async def chunk(self, sections: list[Section]) -> list[Chunk]:
        chunks: list[Chunk] = []
        size, budget = self.measure()
        for section in sections:
            pieces: list[TextBlock | DataBlock]
            if isinstance(section.content, TextBlock):
                text = repeat_table_headers(section.content.text, size, budget)
                pieces = [TextBlock(text=piece) for piece in self.split(text)]
            else:
                pieces = [section.content]
            chunks.extend(
                Chunk(
                    content=piece,
                    source=section.source,
                    chunk_index=0,
                    total_chunks=0,
                    metadata=dict(section.metadata),
                )
                for piece in pieces
            )
        return self.number(chunks)

    @abstractmethod
    def split(self, text: str) -> list[str]:
        """The pieces of ``text``, in order, each non-blank."""

    @abstractmethod
    def measure(self) -> tuple[Callable[[str], int], int]:
        """How the chunker measures a text, and the largest chunk in that measure."""
