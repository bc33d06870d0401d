"""What every command shares when it prints: exit codes, JSON documents, counts."""

from __future__ import annotations

import json
import sys
from typing import Any

from .._errors import ConfigIssue, RagflowError

# The exit-code contract: one meaning per code, the same for every command.
# `docs/cli.md` shows it as a table, generated from EXIT_CODES below.
EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_USAGE = 2  # argparse's own code for a bad command line; a bad pipeline file too
EXIT_INTERRUPTED = 128 + 2  # the shell's code for SIGINT
EXIT_TERMINATED = 128 + 15  # the shell's code for SIGTERM
# A reader that closed the pipe (`... | head`): the shell's code for SIGPIPE.
EXIT_CLOSED_PIPE = 128 + 13
EXIT_ERROR = EXIT_FINDINGS  # the name before the contract; new code says which of 1 and 2

# (code, meaning, what gives it), in the words `docs/cli.md` prints.
EXIT_CODES: tuple[tuple[int, str, str], ...] = (
    (
        EXIT_OK,
        "success",
        "the command did what it was asked. `run` indexed every file it could: a file "
        "that failed to parse under `on_error: skip`, or holds only images a text-only "
        "model cannot embed, is reported (as skipped, with its reason) but is no "
        "failure; `plan` could plan, changes pending or not; `verify` found the store "
        "in sync; `eval` met every threshold",
    ),
    (
        EXIT_FINDINGS,
        "findings",
        "the command ran and found something wrong in the sources, the store or the "
        "results, or could not finish against them: a failed file (under "
        "`on_error: fail`, a file that cannot be read, a skipped one with `--strict`), a "
        "source that matched no file while its collection does not exist yet (`run` and "
        "`plan`: an existing one gets a warning, and the deletion guard judges what the "
        "files' absence deletes), a rebuild not switched to, the mass-deletion guard or "
        "`--refuse-on-fingerprint-change` refusing, documents of the sources' files that "
        "no run wrote (`run` without `--adopt`); changes pending with `plan --check`; "
        "drift or such foreign documents (`verify`); a missed threshold (`eval`); stale schemas (`schema --check`); "
        "a document `copy` left out; a store or model that fails; a document id `delete` "
        "does not find, nothing for `rollback` to switch back to, a knowledge base "
        "`search` finds never built",
    ),
    (
        EXIT_USAGE,
        "usage or configuration error",
        "nothing was done, because the command line or the pipeline file is wrong, "
        "whatever the store holds: an unknown flag or a bad value (argparse), a pipeline "
        "file that does not exist or is invalid (`validate` too exits 2 for it), a name "
        "the file does not define (a knowledge base, a store, a chat model), a bad "
        "`--filter`, `reset` without `--yes` off a terminal, a secret, an extra or a "
        "registered type the file needs and the environment lacks",
    ),
    (
        EXIT_INTERRUPTED,
        "interrupted",
        "Ctrl-C (SIGINT): the command stopped with one line saying where it was; "
        "`run` continues where it stopped when run again",
    ),
    (
        EXIT_TERMINATED,
        "terminated",
        "SIGTERM (`kill`, a service manager stopping it): `run` stops as on Ctrl-C, its "
        "parser processes with it, says where it was and continues there when run again; "
        "another command ends at once (SIGTERM's own action, which the shell shows as 143). "
        "`serve` drains its requests instead and exits 0",
    ),
)


class Interrupted(Exception):
    """Ctrl-C or SIGTERM: the command stops with one line saying where it was, not a traceback."""

    def __init__(self, message: str, exit_code: int = EXIT_INTERRUPTED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class UsageError(RagflowError):
    """A command line a command refuses after argparse took it: exit 2, as argparse's own."""


def print_json(document: Any) -> None:
    """One JSON document on stdout: what `--json` promises in every outcome."""
    print(json.dumps(document, indent=2, ensure_ascii=False))


def print_error(message: str, as_json: bool, issues: list[ConfigIssue] | None = None) -> None:
    """An error as one `error: ...` line on stderr, or as `{"error": ...}` on stdout."""
    if as_json:
        error: dict[str, Any] = {"message": message}
        if issues is not None:
            error["issues"] = [issue.as_dict() for issue in issues]
        print_json({"error": error})
    else:
        print(f"error: {message}", file=sys.stderr)


def plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"
