"""A query's "blank" means one thing to each engine that judges it.

The CLI and the MCP tool call ``checked_query`` (Python's ``re``); the HTTP
server's request model checks ``NOT_BLANK`` with pydantic (Rust's regex
crate); a client or fuzzer reads the same pattern from the OpenAPI document
as JSON Schema, whose regular expressions are ECMAScript's. Each engine's
``\\s`` is a different set, so the pattern names the differences; here every
code point is judged by all three.
"""

from __future__ import annotations

import math
import re
import sys
import unicodedata
from typing import Annotated

import pytest
from pydantic import StringConstraints, TypeAdapter, ValidationError

from ragflow_config._search_input import (
    MAX_ECHOED_NAME,
    MAX_FILTER_CHARS,
    MAX_FILTER_DEPTH,
    MAX_FILTER_KEY_CHARS,
    MAX_FILTER_KEYS,
    MAX_FILTER_VALUE_CHARS,
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    NOT_BLANK,
    SearchInputError,
    checked_filter,
    checked_query,
    checked_score_threshold,
    checked_top_k,
    echoed,
)

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


# -- the bounds every front end applies (the HTTP API, MCP and the CLI say the same) --------


@pytest.mark.parametrize("top_k", [1, 2, MAX_TOP_K])
def test_top_k_from_one_to_the_bound_is_kept(top_k: int) -> None:
    assert checked_top_k(top_k) == top_k


@pytest.mark.parametrize(
    ("top_k", "problem"),
    [
        (0, f"top_k must be from 1 to {MAX_TOP_K}, not 0"),
        (-3, f"top_k must be from 1 to {MAX_TOP_K}, not -3"),
        (MAX_TOP_K + 1, f"top_k must be from 1 to {MAX_TOP_K}, not {MAX_TOP_K + 1}"),
        (True, f"top_k must be an integer from 1 to {MAX_TOP_K}, not True"),
        ("5", f"top_k must be an integer from 1 to {MAX_TOP_K}, not '5'"),
        (2.0, f"top_k must be an integer from 1 to {MAX_TOP_K}, not 2.0"),
        ("x" * 100, f"top_k must be an integer from 1 to {MAX_TOP_K}, not '{'x' * 39}"),
    ],
)
def test_top_k_outside_the_bound_or_not_an_integer_is_refused(top_k: object, problem: str) -> None:
    with pytest.raises(SearchInputError) as refused:
        checked_top_k(top_k)
    assert str(refused.value) == problem


def test_each_front_end_names_its_own_argument() -> None:
    with pytest.raises(SearchInputError, match=r"^--top-k must be from 1"):
        checked_top_k(0, name="--top-k")
    with pytest.raises(SearchInputError, match=r"^QUERY is empty"):
        checked_query(" ", name="QUERY")
    with pytest.raises(SearchInputError, match=r"^--score-threshold must be a number"):
        checked_score_threshold("0.5", name="--score-threshold")
    with pytest.raises(SearchInputError, match=r"^--filter must be an object"):
        checked_filter([], name="--filter")


def test_a_query_up_to_its_length_is_kept_and_a_longer_one_refused() -> None:
    assert checked_query("q" * MAX_QUERY_CHARS) == "q" * MAX_QUERY_CHARS
    with pytest.raises(SearchInputError) as refused:
        checked_query("q" * (MAX_QUERY_CHARS + 1))
    assert str(refused.value) == (
        f"query is {MAX_QUERY_CHARS + 1} characters; at most {MAX_QUERY_CHARS} are accepted"
    )
    assert checked_query("abc", max_chars=3) == "abc"
    with pytest.raises(SearchInputError, match="query is 4 characters; at most 3"):
        checked_query("abcd", max_chars=3)
    with pytest.raises(SearchInputError, match=r"^query must be a string$"):
        checked_query(b"cats")


@pytest.mark.parametrize(("value", "kept"), [(None, None), (0, 0.0), (1, 1.0), (-0.5, -0.5)])
def test_a_finite_score_threshold_is_kept_as_a_float(value: object, kept: float | None) -> None:
    threshold = checked_score_threshold(value)
    assert threshold == kept and type(threshold) is type(kept)


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (math.nan, "score_threshold must be a finite number, not nan"),
        (-math.inf, "score_threshold must be a finite number, not -inf"),
        (10**400, "score_threshold must be a finite number, not an integer that large"),
        (False, "score_threshold must be a number, not False"),
        ("0.5", "score_threshold must be a number, not '0.5'"),
    ],
)
def test_a_score_threshold_that_is_no_finite_number_is_refused(value: object, problem: str) -> None:
    with pytest.raises(SearchInputError) as refused:
        checked_score_threshold(value)
    assert str(refused.value) == problem


def _nested(depth: int) -> dict[str, object]:
    """A filter whose value sits ``depth`` mappings deep."""
    inner: dict[str, object] = {"tenant": "a"}
    for _ in range(depth - 1):
        inner = {"a": inner}
    return inner


def test_a_filter_within_every_bound_is_kept_as_given() -> None:
    at_the_bounds = {
        **{f"k{i}": i for i in range(MAX_FILTER_KEYS - 2)},
        "k" * MAX_FILTER_KEY_CHARS: "v" * MAX_FILTER_VALUE_CHARS,
        "deep": _nested(MAX_FILTER_DEPTH - 1),
    }
    assert checked_filter(at_the_bounds) is at_the_bounds
    assert checked_filter(None) is None
    assert checked_filter({}) == {}


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("tenant=a", "filter must be an object of metadata keys, not 'tenant=a'"),
        (
            _nested(MAX_FILTER_DEPTH + 1),
            f"filter.a.a.a.a.a.a.a.a nests over {MAX_FILTER_DEPTH} levels deep",
        ),
        (
            {"org": {"k" * (MAX_FILTER_KEY_CHARS + 1): 1}},
            f"filter.org has a key of {MAX_FILTER_KEY_CHARS + 1} characters; "
            f"at most {MAX_FILTER_KEY_CHARS} are accepted",
        ),
        (
            {"org": {"name": "v" * (MAX_FILTER_VALUE_CHARS + 1)}},
            f"filter.org.name is {MAX_FILTER_VALUE_CHARS + 1} characters; "
            f"at most {MAX_FILTER_VALUE_CHARS} are accepted",
        ),
        (
            {"org": {f"k{i}": i for i in range(MAX_FILTER_KEYS)}, "one": "more"},
            f"filter names over {MAX_FILTER_KEYS} keys",
        ),
        (
            {f"k{i}": "v" * 1000 for i in range(9)},
            f"filter holds over {MAX_FILTER_CHARS} characters of keys and values",
        ),
    ],
)
def test_a_filter_past_a_bound_is_refused_saying_which(value: object, problem: str) -> None:
    with pytest.raises(SearchInputError) as refused:
        checked_filter(value)
    assert str(refused.value) == problem


def test_the_filter_s_size_counts_its_keys_and_string_values_at_every_level() -> None:
    values = {f"k{i}": "v" * 1000 for i in range(8)}  # 8,016 characters
    # Numbers and booleans count nothing; a nested key counts, and its parent's.
    assert checked_filter({**values, "n": 10**30, "b": True}) is not None
    room = MAX_FILTER_CHARS - 8016 - len("org")
    assert checked_filter({**values, "org": {"x" * room: 1}}) is not None
    with pytest.raises(SearchInputError) as refused:
        checked_filter({**values, "org": {"x" * (room + 1): 1}})
    assert str(refused.value) == (
        f"filter holds over {MAX_FILTER_CHARS} characters of keys and values"
    )


def test_the_number_of_keys_is_the_caller_s_to_set() -> None:
    three = {"a": 1, "b": {"c": 2, "d": 3}}
    assert checked_filter(three, max_keys=3) is three
    with pytest.raises(SearchInputError, match=r"^filter names over 2 keys$"):
        checked_filter(three, max_keys=2)


def test_a_filter_nested_thousands_deep_is_refused_at_the_bound() -> None:
    with pytest.raises(SearchInputError, match=f"nests over {MAX_FILTER_DEPTH} levels"):
        checked_filter(_nested(100_000))


def test_a_long_name_is_cut_when_echoed() -> None:
    assert echoed("n" * MAX_ECHOED_NAME) == "n" * MAX_ECHOED_NAME
    long = "n" * (MAX_ECHOED_NAME + 1)
    assert echoed(long) == f"{'n' * MAX_ECHOED_NAME}... ({MAX_ECHOED_NAME + 1} characters)"
    deep = {"k" * 250: {"x": "v" * (MAX_FILTER_VALUE_CHARS + 1)}}
    with pytest.raises(SearchInputError) as refused:
        checked_filter(deep)
    path = f"filter.{'k' * 250}.x"  # cut once, with its whole length
    assert str(refused.value) == (
        f"{path[:MAX_ECHOED_NAME]}... ({len(path)} characters) is "
        f"{MAX_FILTER_VALUE_CHARS + 1} characters; at most {MAX_FILTER_VALUE_CHARS} are accepted"
    )


def test_a_key_that_is_no_string_is_left_to_the_store_s_check_and_counts_nothing() -> None:
    # Only a Python caller can pass one (JSON keys are strings); flatten_filter refuses it
    # with its own message, so here it neither fails nor takes room from the bound.
    values = {f"k{i}": "v" * 1000 for i in range(8)}  # 8,016 characters
    full = {**values, "x" * (MAX_FILTER_CHARS - 8016): 1, 7: "", 8: ""}
    assert checked_filter(full) is full
