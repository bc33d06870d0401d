"""A reversible spelling of U+0000, which PostgreSQL's text and jsonb cannot hold.

Every string a store writes goes through :func:`to_postgres` (values, keys,
filter values alike, so a filter still matches what was stored) and every
string it reads back through :func:`from_postgres`. U+0000 becomes U+E000
followed by ``0``, and U+E000 itself is doubled; a string holding neither
is stored as it is. U+E000 is a private-use character, so real text almost
never pays for the doubling.
"""

from __future__ import annotations

import re
from typing import Any

_NUL = "\0"
_ESCAPE = "\ue000"
_SPELLED = re.compile(f"{_ESCAPE}([{_ESCAPE}0])")


def to_postgres(value: Any) -> Any:
    """``value`` (a string, or JSON-like structure) with U+0000 spelled out."""
    if isinstance(value, str):
        if _NUL in value or _ESCAPE in value:
            return value.replace(_ESCAPE, _ESCAPE * 2).replace(_NUL, _ESCAPE + "0")
        return value
    if isinstance(value, dict):
        return {to_postgres(key): to_postgres(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [to_postgres(inner) for inner in value]
    return value


def from_postgres(value: Any) -> Any:
    """The inverse of :func:`to_postgres`."""
    if isinstance(value, str):
        if _ESCAPE in value:
            return _SPELLED.sub(lambda found: _NUL if found[1] == "0" else _ESCAPE, value)
        return value
    if isinstance(value, dict):
        return {from_postgres(key): from_postgres(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return [from_postgres(inner) for inner in value]
    return value
