"""A chunker that counts tokens approximately, with no tokenizer: one token per 4 UTF-8 bytes."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import ClassVar

from pydantic import Field, model_validator

from ._boundaries import CONTENT_DEFINED, Boundaries, content_defined_split
from .base import SplittingChunker

BYTES_PER_TOKEN = 4

# Cut points, strongest first: a paragraph break, a line break, a sentence end, a space.
_SEPARATORS = ("\n\n", "\n", ". ", " ")
_WHITESPACE = re.compile(r"\s")
_NON_WHITESPACE = re.compile(r"\S")


def approx_tokens(text: str) -> int:
    """The token estimate: ``len(text.encode("utf-8")) // 4``."""
    return len(text.encode("utf-8")) // BYTES_PER_TOKEN


class ApproxTokenChunker(SplittingChunker):
    """Splits text into pieces of at most ``chunk_size`` approximate tokens.

    A piece fits when ``len(piece.encode("utf-8")) // 4 <= chunk_size``; the
    same rule decides whether a text is split at all. Cuts fall on character
    boundaries (never inside a UTF-8 sequence), preferring, within the last
    half of a piece, a paragraph break, then a line break, then a sentence end,
    then a space. Consecutive pieces share about ``overlap`` tokens, starting at
    a word boundary where there is one. Pieces are stripped of surrounding
    whitespace; blank pieces are dropped. ``DataBlock`` sections pass through whole.

    With ``boundaries: content_defined`` a text longer than ``chunk_size`` is
    first cut at paragraph ends and at sentence ends chosen by a hash of the
    sentence (``_boundaries``: within a paragraph about every ``chunk_size / 2``
    tokens), never closer than ``chunk_size / 4``; each segment, opening on
    the last ``overlap`` tokens of the one before, is then split as above. An edit changes the chunks around it only; the ones
    after it keep their text, so a re-run reuses their stored vectors.
    """

    chunker_type: ClassVar[str] = "approx_token"

    class Parameters(SplittingChunker.Parameters):
        added_later: ClassVar[frozenset[str]] = frozenset({"boundaries"})

        chunk_size: int = Field(
            default=512,
            ge=1,
            title="Chunk Size",
            description="Largest chunk, in approximate tokens (UTF-8 bytes // 4).",
        )
        overlap: int = Field(
            default=50,
            ge=0,
            title="Overlap",
            description="Approximate tokens shared by neighbouring chunks; less than chunk_size.",
        )
        boundaries: Boundaries = Field(
            default="greedy",
            title="Boundaries",
            description="greedy: pack each chunk as full as it goes (AgentScope's reference "
            "behaviour); " + CONTENT_DEFINED,
        )

        @model_validator(mode="after")
        def _overlap_below_chunk_size(self) -> ApproxTokenChunker.Parameters:
            if self.overlap >= self.chunk_size:
                raise ValueError(
                    f"overlap ({self.overlap}) must be less than chunk_size ({self.chunk_size})"
                )
            return self

    parameters: Parameters

    @property
    def chunk_size(self) -> int:
        return self.parameters.chunk_size

    @property
    def overlap(self) -> int:
        return self.parameters.overlap

    def measure(self) -> tuple[Callable[[str], int], int]:
        return _utf8_size, self.chunk_size * BYTES_PER_TOKEN

    def split(self, text: str) -> list[str]:
        """The stripped, non-blank pieces of ``text``."""
        _, budget = self.measure()
        if self.parameters.boundaries == "greedy" or _utf8_size(text) < budget:
            return self._pack(text)
        overlap_bytes = self.overlap * BYTES_PER_TOKEN
        return content_defined_split(
            text,
            _utf8_size,
            budget,
            self._pack,
            lambda text, _previous_cut, cut: self._next_start(text, 0, cut, overlap_bytes),
        )

    def _pack(self, text: str) -> list[str]:
        """``text`` cut greedily, each piece as full as the budget allows."""
        budget = self.chunk_size * BYTES_PER_TOKEN + (BYTES_PER_TOKEN - 1)
        if len(text.encode("utf-8")) <= budget:
            stripped = text.strip()
            return [stripped] if stripped else []
        overlap_bytes = self.overlap * BYTES_PER_TOKEN
        pieces: list[str] = []
        start, length = 0, len(text)
        while (first_visible := _NON_WHITESPACE.search(text, start)) is not None:
            # Leading whitespace is stripped anyway, so it must not use up the budget.
            start = first_visible.start()
            end = start + max(_prefix_fitting(text[start : start + budget], budget), 1)
            if end < length:
                end = self._preferred_cut(text, start, end)
            pieces.append(text[start:end].rstrip())
            if end >= length:
                break
            start = self._next_start(text, start, end, overlap_bytes)
        return pieces

    @staticmethod
    def _preferred_cut(text: str, start: int, end: int) -> int:
        floor = start + (end - start) // 2
        for separator in _SEPARATORS:
            # The separator's whitespace may lie just past the piece: cutting right
            # before a space is as good as cutting after it.
            limit = end + len(separator) - len(separator.rstrip())
            at = text.rfind(separator, floor, limit)
            if at > start:
                return min(at + len(separator), end)
        return end

    @staticmethod
    def _next_start(text: str, start: int, end: int, overlap_bytes: int) -> int:
        if overlap_bytes == 0:
            return end
        window = text[max(start, end - overlap_bytes) : end]
        candidate = max(end - _suffix_fitting(window, overlap_bytes), start + 1)
        if not text[candidate - 1].isspace():
            # Up to and including text[end]: the cut may sit right before a space.
            space = _WHITESPACE.search(text, candidate, end + 1)
            if space:
                candidate = space.end()
        return candidate if candidate < end else end


def _utf8_size(text: str) -> int:
    return len(text.encode("utf-8"))


# Byte budgets are met by encoding a window of at most `budget` characters (each
# is at least one byte) and dropping the character a cut would split.
def _prefix_fitting(window: str, budget: int) -> int:
    """How many leading characters of ``window`` fit in ``budget`` UTF-8 bytes."""
    if window.isascii():
        return min(len(window), budget)
    return len(window.encode("utf-8")[:budget].decode("utf-8", "ignore"))


def _suffix_fitting(window: str, budget: int) -> int:
    """How many trailing characters of ``window`` fit in ``budget`` UTF-8 bytes."""
    if window.isascii():
        return min(len(window), budget)
    encoded = window.encode("utf-8")
    return len(encoded[max(0, len(encoded) - budget) :].decode("utf-8", "ignore"))
