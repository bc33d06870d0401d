"""A chunker that counts exactly, with the embedding model's own tokenizer."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar

from pydantic import Field

from ..._component import ComponentParameters
from ._boundaries import CONTENT_DEFINED, Boundaries, content_defined_split, overlap_start
from ._tokens import TokenCounter, TokenParameters
from .base import SplittingChunker


class TokenChunker(SplittingChunker):
    """Pieces of at most ``chunk_size`` word pieces of the embedding model's tokenizer.

    Sizes are counted with the model's own tokenizer, special tokens included
    (MiniLM's by default, or any Hugging Face ``tokenizer_file``): a chunk is
    exactly as long as the model sees it, and with the default ``chunk_size``
    (MiniLM's window, 256) no chunk is ever truncated by ``minilm``, where
    ``approx_token`` at 256 (one token per 4 bytes) gives chunks that are.
    Cuts fall on the largest unit that fits, by semantic-text-splitter's
    levels: paragraph breaks, line breaks, sentences, words, then graphemes.
    Pieces are trimmed; neighbouring ones share up to ``overlap`` word pieces.
    ``DataBlock`` sections pass through whole.

    With ``boundaries: content_defined`` a text longer than ``chunk_size`` is
    first cut at paragraph ends and at sentence ends chosen by a hash of the
    sentence (``_boundaries``, as ``approx_token`` cuts), each segment opening
    on the last whole sentences before it that fit in ``overlap`` (as the
    splitter overlaps), then split as above: an edit changes the chunks
    around it only.
    """

    chunker_type: ClassVar[str] = "token"
    requires: ClassVar[dict[str, str]] = {
        "semantic_text_splitter": "documents",
        "tokenizers": "documents",
    }

    class Parameters(TokenParameters):
        added_later: ClassVar[frozenset[str]] = frozenset({"boundaries"})

        boundaries: Boundaries = Field(
            default="greedy",
            description="greedy: semantic-text-splitter's packing, each chunk as full as it "
            "goes; " + CONTENT_DEFINED,
        )

    parameters: Parameters

    def __init__(self, parameters: ComponentParameters | None = None, **options: Any) -> None:
        super().__init__(parameters, **options)
        self.counter = TokenCounter(self.parameters)

    def measure(self) -> tuple[Callable[[str], int], int]:
        return self.counter.count, self.counter.budget

    def split(self, text: str) -> list[str]:
        """The trimmed, non-blank pieces of ``text``."""
        count, budget = self.measure()
        if self.parameters.boundaries == "greedy" or count(text) <= budget:
            return self._pack(text)
        overlap = self.parameters.overlap
        return content_defined_split(
            text,
            count,
            budget,
            self._pack,
            lambda text, previous_cut, cut: overlap_start(text, previous_cut, cut, count, overlap),
        )

    def _pack(self, text: str) -> list[str]:
        return [piece for piece in self.counter.splitter("text").chunks(text) if piece.strip()]
