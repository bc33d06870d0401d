"""What a search request may hold, checked the same way by every front end.

The CLI (``search``, ``chat``), the HTTP API and the MCP tool all call these,
so ``search --top-k 0``, ``{"top_k": 0}`` and an agent's blank query are
refused alike, with the same words, whatever store is behind them.

- ``top_k``: an integer (not a bool, not a numeral in a string) from 1 to
  :data:`MAX_TOP_K`. Milvus caps a search at 16,384 hits and Qdrant does not;
  one bound well under every store's keeps a knowledge base portable.
- a query: text that is not blank once stripped (a blank one would match by
  the model's bias alone and return arbitrary hits).
- a query is at most :data:`MAX_QUERY_CHARS` characters unless the caller
  says otherwise (``serve --max-query-chars``): a model embeds a few hundred
  tokens, and a lexical side scores every term, so a longer query only costs.
- several queries searched together (``KnowledgeBase.search`` takes a list; a
  ``RemoteKnowledgeBase`` sends it): at most :data:`MAX_QUERIES`, each a query
  as above, since each is embedded and searched.
- ``score_threshold``: a finite number, or none (NaN compares false with every
  score, so it silently dropped nothing); an integer too large for a float
  (``1`` and 400 zeros) is refused, not overflowed.
- a client's ``filter``: bounded before any store sees it (a store may check a
  filter against every point, so its size is work): at most
  :data:`MAX_FILTER_DEPTH` levels of nesting, keys of at most
  :data:`MAX_FILTER_KEY_CHARS` characters, string values of at most
  :data:`MAX_FILTER_VALUE_CHARS`, at most ``max_keys`` key paths and
  :data:`MAX_FILTER_CHARS` characters of keys and values in all.
- a name echoed back in an error is cut to :data:`MAX_ECHOED_NAME` characters.
"""

from __future__ import annotations

import math
import re

MAX_TOP_K = 50
MAX_ECHOED_NAME = 200
MAX_QUERY_CHARS = 2000
MAX_QUERIES = 8
MAX_FILTER_KEYS = 16
MAX_FILTER_DEPTH = 8
MAX_FILTER_KEY_CHARS = 256
MAX_FILTER_VALUE_CHARS = 1024
MAX_FILTER_CHARS = 8192


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


def checked_query(value: object, *, name: str = "query", max_chars: int = MAX_QUERY_CHARS) -> str:
    """``value`` unchanged when it is text with something besides white space,
    of at most ``max_chars`` characters."""
    if not isinstance(value, str):
        raise SearchInputError(f"{name} must be a string")
    if len(value) > max_chars:
        raise SearchInputError(
            f"{name} is {len(value)} characters; at most {max_chars} are accepted"
        )
    if not _NOT_BLANK.search(value):
        raise SearchInputError(f"{name} is empty; say what to find")
    return value


def checked_queries(
    value: object, *, name: str = "query", max_chars: int = MAX_QUERY_CHARS
) -> str | list[str]:
    """``value`` unchanged when it is one query or a list of 1 to ``MAX_QUERIES`` of them."""
    if not isinstance(value, list):
        return checked_query(value, name=name, max_chars=max_chars)
    if not 1 <= len(value) <= MAX_QUERIES:
        raise SearchInputError(f"{name} must hold 1 to {MAX_QUERIES} queries, not {len(value)}")
    for index, query in enumerate(value):
        checked_query(query, name=f"{name}[{index}]", max_chars=max_chars)
    return value


def checked_score_threshold(value: object, *, name: str = "score_threshold") -> float | None:
    """``value`` as a float when it is a finite number; ``None`` stays ``None``."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise SearchInputError(f"{name} must be a number, not {value!r:.40}")
    try:
        number = float(value)  # an integer past a float's range overflows here
    except OverflowError:
        raise SearchInputError(
            f"{name} must be a finite number, not an integer that large"
        ) from None
    if not math.isfinite(number):
        raise SearchInputError(f"{name} must be a finite number, not {value}")
    return number


def checked_filter(
    value: object, *, name: str = "filter", max_keys: int = MAX_FILTER_KEYS
) -> dict[str, object] | None:
    """``value`` unchanged when it is ``None`` or a mapping within the bounds above.

    Walked without recursion and stopped at the first bound passed, so a filter
    nested thousands deep costs no more than one at the bound. The values'
    kinds (strings, numbers, booleans) are the stores' check (``flatten_filter``).
    """
    if value is None:
        return None
    if not isinstance(value, dict):
        raise SearchInputError(f"{name} must be an object of metadata keys, not {value!r:.40}")
    keys = size = 0
    pending: list[tuple[str, dict[object, object], int]] = [(name, value, 1)]
    while pending:
        where, mapping, depth = pending.pop()
        if depth > MAX_FILTER_DEPTH:
            raise SearchInputError(f"{echoed(where)} nests over {MAX_FILTER_DEPTH} levels deep")
        for key, inner in mapping.items():
            if isinstance(key, str) and len(key) > MAX_FILTER_KEY_CHARS:
                raise SearchInputError(
                    f"{echoed(where)} has a key of {len(key)} characters; "
                    f"at most {MAX_FILTER_KEY_CHARS} are accepted"
                )
            size += len(key) if isinstance(key, str) else 0
            # Whole in ``pending`` (at most MAX_FILTER_DEPTH keys of bounded length), cut
            # only where an error repeats it, so the cut names the path's real length.
            path = f"{where}.{key}"
            if isinstance(inner, dict):
                pending.append((path, inner, depth + 1))
                continue
            keys += 1
            if keys > max_keys:
                raise SearchInputError(f"{name} names over {max_keys} keys")
            if isinstance(inner, str):
                if len(inner) > MAX_FILTER_VALUE_CHARS:
                    raise SearchInputError(
                        f"{echoed(path)} is {len(inner)} characters; "
                        f"at most {MAX_FILTER_VALUE_CHARS} are accepted"
                    )
                size += len(inner)
            if size > MAX_FILTER_CHARS:
                raise SearchInputError(
                    f"{name} holds over {MAX_FILTER_CHARS} characters of keys and values"
                )
    return value


def echoed(name: str) -> str:
    """``name`` as an error may repeat it: at most ``MAX_ECHOED_NAME`` characters."""
    if len(name) <= MAX_ECHOED_NAME:
        return name
    return f"{name[:MAX_ECHOED_NAME]}... ({len(name)} characters)"
