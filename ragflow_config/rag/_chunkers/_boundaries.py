"""Content-defined cut points: chunk boundaries that resynchronise after an edit.

A chunker that packs greedily from the start of a section moves every later
boundary when a paragraph is inserted, so no chunk after the edit keeps its
text (and its stored vector). Here the cut points are chosen by the text
around them, as rsync and restic choose theirs in bytes: a paragraph end is
a *candidate*, and so is a sentence end when a hash of the sentence before it
falls under a threshold proportional to that sentence's size (so within a
paragraph candidates lie ``spacing`` apart on average, whatever the sentence
lengths), and a candidate
becomes a cut when the text since the previous candidate is at least
``minimum`` long. Both tests read only the text between two neighbouring
candidates, so from the second candidate after an edit on, the cuts are the
ones the text had before it.

:func:`content_defined_split` is the whole option for a chunker: cut there,
then split each segment (opening on the end of the one before, for the
overlap) the chunker's own way; every chunker with ``boundaries`` uses it.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Literal

# A unit ends after a paragraph break, or after a sentence end and its whitespace.
_UNIT_END = re.compile(r"\n\s*\n\s*|(?<=[.!?])\s+")
_HASH_RANGE = 1 << 64

Boundaries = Literal["greedy", "content_defined"]
# The content_defined half of a `boundaries` description; each chunker says what greedy is there.
CONTENT_DEFINED = (
    "content_defined: cut at paragraph and sentence ends chosen by the text around them, so "
    "that after an edit the later chunks stay the same and a re-run reuses their vectors."
)


def content_defined_split(
    text: str,
    size: Callable[[str], int],
    budget: int,
    split: Callable[[str], list[str]],
    opening: Callable[[str, int, int], int],
) -> list[str]:
    """``text`` cut at content-defined points, each segment split by ``split``.

    ``budget`` is the largest chunk in ``size``'s unit: candidates lie half a
    chunk apart on average, segments at least a quarter chunk long. The
    segment starting at a cut opens at ``opening(text, previous_cut, cut)``,
    at or before that cut, so neighbouring chunks share an overlap there as
    they do inside a segment.
    """
    pieces: list[str] = []
    previous, start = 0, 0
    for end in content_defined_cuts(text, size, spacing=budget // 2, minimum=budget // 4):
        pieces.extend(split(text[opening(text, previous, start) if start else 0 : end]))
        previous, start = start, end
    return pieces


def overlap_start(text: str, floor: int, end: int, size: Callable[[str], int], overlap: int) -> int:
    """Where the last whole units of ``text[floor:end]`` that fit ``overlap`` start.

    ``floor`` and ``end`` are unit ends (cuts); ``end`` when even the last
    unit is larger than ``overlap``, so a chunk overlaps its neighbour by
    whole sentences, as semantic-text-splitter's overlap does. Found by
    bisection, the size of a suffix growing with its length.
    """
    starts = [floor] + [match.end() for match in _UNIT_END.finditer(text, floor, end)]
    starts = [start for start in starts if start < end]
    low, high = 0, len(starts)  # the answer is starts[low], or end when low == len(starts)
    while low < high:
        middle = (low + high) // 2
        if size(text[starts[middle] : end]) <= overlap:
            high = middle
        else:
            low = middle + 1
    return starts[low] if low < len(starts) else end


def content_defined_cuts(
    text: str, size: Callable[[str], int], spacing: int, minimum: int
) -> list[int]:
    """The offsets in ``text`` where a segment ends, the last one ``len(text)``.

    ``size`` measures text in the chunker's unit; ``spacing`` is the mean
    distance between candidates and ``minimum`` the shortest segment (but a
    text's first and last), in that unit.
    """
    cuts: list[int] = []
    previous_candidate = 0
    unit_start = 0
    for match in _UNIT_END.finditer(text):
        unit_end = match.end()
        if unit_end >= len(text):
            break
        unit = text[unit_start:unit_end]
        unit_start = unit_end
        paragraph_end = "\n" in match.group()
        if not paragraph_end and not _is_candidate(unit, size(unit), spacing):
            continue
        if size(text[previous_candidate:unit_end]) >= minimum:
            cuts.append(unit_end)
        previous_candidate = unit_end
    cuts.append(len(text))
    return cuts


def _is_candidate(unit: str, unit_size: int, spacing: int) -> bool:
    digest = hashlib.blake2b(unit.strip().encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") * spacing < unit_size * _HASH_RANGE
