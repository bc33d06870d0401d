"""A chunker that cuts at the first separator of a list that makes the pieces fit, recursively."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Literal

from pydantic import Field, model_validator

from ..._component import ComponentParameters
from ._boundaries import CONTENT_DEFINED, Boundaries, content_defined_split, overlap_start
from ._tokens import TokenCounter, TokenParameters
from .base import SplittingChunker

# Paragraph, line, sentence, clause, word; "" (a character) is always the last resort.
DEFAULT_SEPARATORS = ["\n\n", "\n", ". ", "! ", "? ", "; ", ", ", " "]


class RecursiveChunker(SplittingChunker):
    """Cuts text at the strongest separator that makes its pieces fit, then merges them.

    A text longer than ``chunk_size`` is split at every occurrence of the
    first of ``separators`` it contains (each separator stays at the end of
    the piece before it); a piece still too long is split by the next
    separators in turn, and a piece no separator splits is cut between
    characters. Neighbouring pieces are then merged, in order, into chunks of
    at most ``chunk_size``; a chunk starts with the last pieces of the one
    before, up to ``overlap``. With the default separators a chunk ends at a
    paragraph, line, sentence, clause or word end, in that preference: a
    sentence chunker. Sizes are counted in ``unit``: ``tokens`` (the
    embedding model's word pieces, special tokens included, as the ``token``
    chunker counts; MiniLM's window by default) or ``characters`` (then
    ``chunk_size`` is required). Chunks are stripped; blank ones are dropped.
    ``DataBlock`` sections pass through whole.

    With ``boundaries: content_defined`` a text longer than ``chunk_size`` is
    first cut at paragraph ends and at sentence ends chosen by a hash of the
    sentence (``_boundaries``, as ``approx_token`` cuts), each segment opening
    on the last whole sentences before it that fit in ``overlap``, then split
    as above: an edit changes the chunks around it only.
    """

    chunker_type: ClassVar[str] = "recursive"
    requires: ClassVar[dict[str, str]] = {"tokenizers": "documents"}

    class Parameters(TokenParameters):
        added_later: ClassVar[frozenset[str]] = frozenset({"boundaries"})

        unit: Literal["tokens", "characters"] = Field(
            default="tokens",
            description="What chunk_size and overlap count: the tokenizer's word pieces or "
            "characters.",
        )
        separators: list[str] = Field(
            default_factory=lambda: list(DEFAULT_SEPARATORS),
            min_length=1,
            description="Where to cut, strongest first; a piece no separator splits is cut "
            "between characters.",
        )
        boundaries: Boundaries = Field(
            default="greedy",
            description="greedy: merge the pieces into chunks as full as they go; "
            + CONTENT_DEFINED,
        )

        @model_validator(mode="after")
        def _characters_need_a_size(self) -> RecursiveChunker.Parameters:
            if self.unit == "characters" and self.chunk_size is None:
                raise ValueError("chunk_size is required when unit is characters")
            if any(separator == "" for separator in self.separators):
                raise ValueError("separators must not be empty strings")
            return self

    parameters: Parameters

    def __init__(self, parameters: ComponentParameters | None = None, **options: Any) -> None:
        super().__init__(parameters, **options)
        self.counter = TokenCounter(self.parameters)

    def measure(self) -> tuple[Callable[[str], int], int]:
        if self.parameters.unit == "characters":
            return len, self.parameters.chunk_size or 0
        return self.counter.count, self.counter.budget

    def split(self, text: str) -> list[str]:
        """The stripped, non-blank chunks of ``text``."""
        size, budget = self.measure()
        if self.parameters.boundaries == "greedy" or size(text.strip()) <= budget:
            return self._pack(text, size, budget)
        overlap = self.parameters.overlap
        return content_defined_split(
            text,
            size,
            budget,
            lambda segment: self._pack(segment, size, budget),
            lambda text, previous_cut, cut: overlap_start(text, previous_cut, cut, size, overlap),
        )

    def _pack(self, text: str, size: Callable[[str], int], budget: int) -> list[str]:
        """``text`` in chunks as full as they go."""
        if size(text.strip()) <= budget:
            return [text.strip()] if text.strip() else []
        pieces = _pieces(text, self.parameters.separators, size, budget)
        return _merge(pieces, size, budget, self.parameters.overlap)


def _pieces(text: str, separators: list[str], size: Callable[[str], int], budget: int) -> list[str]:
    """``text`` cut into pieces that each fit, at the strongest separators that do it."""
    if size(text) <= budget:
        return [text]
    for number, separator in enumerate(separators):
        if separator in text:
            parts = text.split(separator)
            cut = [part + separator for part in parts[:-1]] + [parts[-1]]
            pieces: list[str] = []
            for part in cut:
                if part:
                    pieces.extend(_pieces(part, separators[number + 1 :], size, budget))
            return pieces
    return _by_characters(text, size, budget)


def _by_characters(text: str, size: Callable[[str], int], budget: int) -> list[str]:
    pieces = []
    while text:
        low, high = 1, len(text)
        while low < high:  # the longest prefix that fits, by bisection
            middle = (low + high + 1) // 2
            if size(text[:middle]) <= budget:
                low = middle
            else:
                high = middle - 1
        pieces.append(text[:low])
        text = text[low:]
    return pieces


def _merge(pieces: list[str], size: Callable[[str], int], budget: int, overlap: int) -> list[str]:
    """Neighbouring pieces joined into chunks that fit, each opening on the last one's tail."""
    chunks: list[str] = []
    current: list[str] = []
    for piece in pieces:
        if current and size("".join([*current, piece]).strip()) > budget:
            chunks.append("".join(current).strip())
            tail: list[str] = []
            for previous in reversed(current):
                if size("".join([previous, *tail]).strip()) > overlap:
                    break
                tail.insert(0, previous)
            # The overlap must leave room for the new piece.
            while tail and size("".join([*tail, piece]).strip()) > budget:
                tail.pop(0)
            current = tail
        current.append(piece)
    if current:
        chunks.append("".join(current).strip())
    return [chunk for chunk in chunks if chunk]
