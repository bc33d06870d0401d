"""A stream that says it is a terminal, as a user's stdin or stderr would."""

from __future__ import annotations

import io


class Terminal(io.StringIO):
    """What a user types at a terminal, or the screen a live display draws on."""

    def isatty(self) -> bool:
        return True
