"""What PostgreSQL's errors mean: which are worth another attempt, and what to tell."""

from __future__ import annotations

from typing import Any

# SQLSTATEs worth another attempt on a fresh connection: the server shutting
# down or starting (57P01-57P03), too many connections, a statement timeout.
_RETRYABLE_STATES = frozenset({"57P01", "57P02", "57P03", "53300", "57014"})
# What to do, by SQLSTATE.
_ADVICE = {
    "53100": "the database server's disk is full: free space on its data volume, then run again",
    "53200": "the database server is out of memory",
    "25006": "the server accepts no writes (a read-only standby, or default_transaction_read_only "
    "is on): point the connection string at the primary",
    "42501": "permission denied: grant the connecting user CREATE on the schema and "
    "SELECT, INSERT, DELETE on the store's tables",
}


def retryable(exc: Any) -> bool:
    """A lost or refused connection (no SQLSTATE, or class 08) or a transient server state."""
    state = exc.sqlstate
    return state is None or state.startswith("08") or state in _RETRYABLE_STATES


def explain(exc: Any) -> str:
    """One line: the error class, the server's primary message, and what to do."""
    message = exc.diag.message_primary or " ".join(str(exc).split())
    advice = _ADVICE.get(exc.sqlstate or "")
    return f"{type(exc).__name__}: {message}" + (f"; {advice}" if advice else "")
