"""A query's "blank" means one thing to each engine that judges it.

The CLI and the MCP tool call ``checked_query`` (Python's ``re``); the HTTP
server's request model checks ``NOT_BLANK`` with pydantic (Rust's regex
crate); a client or fuzzer reads the same pattern from the OpenAPI document
as JSON Schema, whose regular expressions are ECMAScript's. Each engine's
``\\s`` is a different set, so the pattern names the differences; here every
code point is judged by all three.
"""

from __future__ import annotations

import re
import sys
import unicodedata
from typing import Annotated

import pytest
from pydantic import StringConstraints, TypeAdapter, ValidationError

from ragflow_config._search_input import NOT_BLANK, SearchInputError, checked_query

# ECMAScript's \s (ECMA-262, CharacterClassEscape): WhiteSpace and LineTerminator.
ECMA_SPACE = set("\t\v\f \xa0\ufeff\n\r\u2028\u2029")
CODE_POINTS = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]


def ecma_has_one_not_blank(text: str) -> bool:
    """NOT_BLANK's class as ECMAScript reads it: its \\s, and the ranges it names."""
    explicit = re.compile(NOT_BLANK.replace(r"\s", ""))  # the class without \s
    return any(
        not (ch in ECMA_SPACE or unicodedata.category(ch) == "Zs") and explicit.fullmatch(ch)
        for ch in text
    )


def test_every_code_point_is_blank_alike_to_python_pydantic_and_json_schema() -> None:
    server = TypeAdapter(Annotated[str, StringConstraints(pattern=NOT_BLANK)])
    disagreements = []
    for ch in CODE_POINTS:
        python = bool(re.search(NOT_BLANK, ch))
        try:
            server.validate_python(ch)
            pydantic = True
        except ValidationError:
            pydantic = False
        ecma = ecma_has_one_not_blank(ch)
        if not python == pydantic == ecma:
            disagreements.append((f"U+{ord(ch):04X}", python, pydantic, ecma))
    assert disagreements == []


@pytest.mark.parametrize("query", ["\x85", "\x1c", "\ufeff ", " \t\n", "\u3000"])
def test_a_query_of_white_space_is_refused(query: str) -> None:
    with pytest.raises(SearchInputError, match="query is empty; say what to find"):
        checked_query(query)


@pytest.mark.parametrize("query", ["x", "\u200b", " cats ", "\x00"])
def test_a_query_with_something_besides_white_space_is_kept_as_given(query: str) -> None:
    assert checked_query(query) == query
