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
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

# A unit ends after a paragraph break, or after a sentence end and its whitespace.
_UNIT_END = re.compile(r"\n\s*\n\s*|(?<=[.!?])\s+")
_HASH_RANGE = 1 << 64


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
