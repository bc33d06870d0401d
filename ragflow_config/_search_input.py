"""What a search request may hold, checked the same way by every front end.

The CLI (``search``, ``chat``), the HTTP API and the MCP tool all call these,
so ``search --top-k 0``, ``{"top_k": 0}`` and an agent's blank query are
refused alike, with the same words, whatever store is behind them.

- ``top_k``: an integer (not a bool, not a numeral in a string) from 1 to
  :data:`MAX_TOP_K`. Milvus caps a search at 16,384 hits and Qdrant does not;
  one bound well under every store's keeps a knowledge base portable.
- a query: text that is not blank once stripped (a blank one would match by
  the model's bias alone and return arbitrary hits).
- ``score_threshold``: a finite number, or none (NaN compares false with every
  score, so it silently dropped nothing).
- a name echoed back in an error is cut to :data:`MAX_ECHOED_NAME` characters.
"""

from __future__ import annotations

import math
import re

MAX_TOP_K = 50
MAX_ECHOED_NAME = 200


class SearchInputError(ValueError):
    """A search request's value is out of bounds; the message says what is expected."""


def checked_top_k(value: object, *, name: str = "top_k") -> int:
    """``value`` when it is an integer from 1 to ``MAX_TOP_K``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SearchInputError(
            f"{name} must be an integer from 1 to {MAX_TOP_K}, not {value!r:.40}"
        )
    if not 1 <= value <= MAX_TOP_K:
        raise SearchInputError(f"{name} must be from 1 to {MAX_TOP_K}, not {value}")
    return value


# A query must hold one character that is not blank, as a regular expression
# says it for the HTTP API's JSON Schema. Python's \s (str.isspace()), JSON
# Schema's (ECMAScript's) \s and pydantic's (Rust's) \s disagree on U+001C-U+001F,
# U+0085 and U+FEFF; all are blank here, so the schema, the server and the CLI
# agree (tests/core/test_search_input.py checks every code point).
NOT_BLANK = r"[^\s\x1c-\x1f\x85\ufeff]"
_NOT_BLANK = re.compile(NOT_BLANK)


def checked_query(value: object, *, name: str = "query") -> str:
    """``value`` unchanged when it is text with something besides white space."""
    if not isinstance(value, str):
        raise SearchInputError(f"{name} must be a string")
    if not _NOT_BLANK.search(value):
        raise SearchInputError(f"{name} is empty; say what to find")
    return value


def checked_score_threshold(value: object, *, name: str = "score_threshold") -> float | None:
    """``value`` as a float when it is a finite number; ``None`` stays ``None``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SearchInputError(f"{name} must be a number, not {value!r:.40}")
    if not math.isfinite(value):
        raise SearchInputError(f"{name} must be a finite number, not {value}")
    return float(value)


def echoed(name: str) -> str:
    """``name`` as an error may repeat it: at most ``MAX_ECHOED_NAME`` characters."""
    if len(name) <= MAX_ECHOED_NAME:
        return name
    return f"{name[:MAX_ECHOED_NAME]}... ({len(name)} characters)"
