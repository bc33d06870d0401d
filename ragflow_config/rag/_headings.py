"""Markdown cut at its headings: each part with the path of headings it sits under.

Shared by the ``markdown`` and ``html`` parsers and the ``heading`` chunker.
Headings are found by a CommonMark parser (``markdown-it-py``), so a ``#``
inside a fenced code block is not a heading and setext headings (a line
underlined with ``===`` or ``---``) are.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

HEADINGS_KEY = "headings"
"""The metadata key of a section's or chunk's heading path, outermost first."""


@dataclass
class HeadingPart:
    headings: list[str]
    """The titles of the headings this part sits under, outermost first."""
    text: str
    """The part's Markdown, its own heading line first (if it has one)."""


def split_by_headings(text: str, max_level: int = 6) -> list[HeadingPart]:
    """``text`` cut before every heading of level ``max_level`` or above.

    Text before the first heading is a part with an empty path. A part that is
    a heading alone (its section opens straight onto a sub-heading) is dropped:
    its title lives on in its sub-sections' paths. Parts are stripped; blank
    ones are dropped.
    """
    from markdown_it import MarkdownIt

    lines = text.splitlines(keepends=True)
    headings: list[tuple[int, int, int, str]] = []  # first line, line after it, level, title
    tokens = MarkdownIt("commonmark").parse(text)
    for token, inline in pairwise(tokens):
        if token.type == "heading_open" and token.map is not None:
            level = int(token.tag[1])
            if level <= max_level:
                headings.append((token.map[0], token.map[1], level, inline.content.strip()))
    parts: list[HeadingPart] = []
    path: list[tuple[int, str]] = []
    before_first = headings[0][0] if headings else len(lines)
    _add(parts, [], lines[:before_first], lines[:before_first])
    for number, (begin, body_begin, level, title) in enumerate(headings):
        end = headings[number + 1][0] if number + 1 < len(headings) else len(lines)
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, title))
        _add(parts, [title for _, title in path], lines[begin:end], lines[body_begin:end])
    return parts


def _add(parts: list[HeadingPart], path: list[str], lines: list[str], body: list[str]) -> None:
    if "".join(body).strip():
        parts.append(HeadingPart(path, "".join(lines).strip()))
