"""`docs/cli.md`, the reference of every command's arguments, matches the parser.

The reference is what users read without installing: each argument's name, the
value it takes, its default and its help. This test fails whenever a flag, a
default or a help text changes without the reference, so such a change is seen
in review. Regenerate it after a deliberate change with

    python tests/cli/test_cli_reference.py

It is built from the parser's arguments rather than from `--help` output,
whose layout depends on the terminal width and the Python version.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ragflow_config.cli._main import build_parser
from ragflow_config.cli._output import EXIT_CLOSED_PIPE, EXIT_CODES

REFERENCE = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
REGENERATE = "python tests/cli/test_cli_reference.py"


def reference() -> str:
    parser = build_parser()
    # argparse has no public way to list a parser's arguments; `_actions` and
    # `_mutually_exclusive_groups` are what its own help formatter reads.
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    lines = [
        "# Command-line reference",
        "",
        f"Generated from the argument parser by `{REGENERATE}`;",
        "`tests/cli/test_cli_reference.py` fails when this file is stale.",
        "",
        *_exit_codes(),
        "",
        *_json_output(),
        "",
        *_section(f"`{parser.prog} {_metavar(commands)}`", parser),
    ]
    summaries = {choice.dest: choice.help for choice in commands._choices_actions}
    for name, sub in commands.choices.items():
        positionals = [_metavar(a) for a in sub._actions if not a.option_strings]
        lines += ["", *_section(f"`{' '.join([parser.prog, name, *positionals])}`", sub)]
        if summaries[name] != sub.description:
            lines += ["", f"Listed in `{parser.prog} --help` as: {summaries[name]}"]
    return "\n".join(lines) + "\n"


def _exit_codes() -> list[str]:
    """The exit-code contract, from the constants every command returns
    (`tests/cli/test_exit_codes.py` holds each command to it)."""
    lines = [
        "## Exit codes",
        "",
        "Every command gives one of these, with the same meaning everywhere:",
        "",
        "| code | meaning | when |",
        "| --- | --- | --- |",
    ]
    lines += [f"| {code} | {meaning} | {when} |" for code, meaning, when in EXIT_CODES]
    return [
        *lines,
        "",
        "`plan` exits 0 whenever it could plan, changes pending or not: pending changes "
        "are what a plan is for, not a failure. `plan --check` makes them a finding (1), "
        "the way `schema --check` treats stale schemas and `ruff format --check` "
        "unformatted files; 2 stays for a command line or file that is wrong. "
        "(Terraform's `-detailed-exitcode` gives 2 for changes, the code kept here for "
        "usage and configuration errors.)",
        "",
        "Under `on_error: skip`, `run`, `plan` and `verify` agree on a file that fails to "
        "parse: each reports it as skipped, with its reason, and exits 0; `--strict` makes "
        "it a finding (1) for all three. Under `on_error: fail` it is a finding, and `run` "
        "stops at the first. A file that cannot be read is always a finding, and so is a "
        "rebuild that is not switched to. A rebuild with failed files, skipped ones "
        "included, goes live when the live collection holds none of them (they failed "
        "there too, or are new) or when they are at most the knowledge base's "
        "`max_failed_fraction` of its files; `plan` says which, on stdout, and exits "
        "as the run would.",
        "",
        f"A reader that closes the pipe early (`ragflow-config list ... | head`) ends the "
        f"command with {EXIT_CLOSED_PIPE}, a shell's code for SIGPIPE, and no traceback.",
    ]


def _json_output() -> list[str]:
    """What `--json` promises on every command (`tests/cli/test_conventions.py` holds each
    command to it)."""
    return [
        "## JSON output",
        "",
        "Every command takes `--json`. Its stdout is then one JSON object (never a bare "
        "list), pretty-printed, and nothing else; warnings and progress stay on stderr. "
        "Where a command cannot do what it was asked, or its command line is refused, the "
        "object is an error, with the exit code of the table above:",
        "",
        "```json",
        '{"error": {"message": "what went wrong and what to do",'
        ' "issues": [{"file": "pipeline.yaml", "line": 3, "column": 5, "path": '
        '"knowledge_bases[0]", "message": "..."}]}}',
        "```",
        "",
        "`issues` is there when the pipeline file is invalid. The HTTP API (`serve`) "
        'answers its errors with the same `{"error": {"message": ...}}`.',
        "",
        "Results are objects named by what they hold:",
        "",
        "| command | `--json` prints |",
        "| --- | --- |",
        '| `validate` | `{"files": [{"file", "valid", "checks"}], "issues": [...], '
        '"warnings": [...]}`: the issues are the result, so an invalid file still prints '
        "this (exit 2); `warnings` are advice on a valid file, each an issue's fields "
        "(exit 0); `checks` with "
        '`--check-env`, each `{"kind", "name", "type", "ok", "message"}` '
        "(`ok` is null where there was nothing to check) |",
        '| `search` | `{"knowledge_base", "hits": [...]}`, as the HTTP API\'s search answers |',
        '| `list` | `{"knowledge_base", "total", "documents": [...]}` |',
        '| `delete` | `{"knowledge_base", "deleted"}` |',
        '| `reset` | `{"knowledge_base", "collection_dropped"}` |',
        '| `rollback` | `{"live", "previous": [...]}` |',
        '| `run`, `plan`, `verify` | the report: `{"knowledge_bases": [...], ...}` |',
        "| `copy`, `eval` | the report, as an object |",
        '| `types` | `{KIND: {TYPE: {"class", "distribution", "parameters"}}}`, of one kind '
        "with `types KIND` |",
        '| `schema` | `{"folder", "written": [...]}`; with `--check`, `{"folder", "stale": [...]}` |',
        '| `init` | `{"file", "knowledge_base", "source", "files", "parsers", "left_out", '
        '"extras", "next": [...]}` |',
        '| `chat` | `{"question", "answer"}`, one object per question |',
        '| `serve` | `{"serving": {"url", "mcp", "openapi", "knowledge_bases"}}` once it '
        "listens (HTTP only) |",
        "",
        "`-v` and `-q` are accepted before the command or after it; `-q` leaves errors only.",
    ]


def _section(title: str, parser: argparse.ArgumentParser) -> list[str]:
    lines = [f"## {title}", "", str(parser.description), ""]
    lines += ["| argument | value | default | help |", "| --- | --- | --- | --- |"]
    for action in parser._actions:
        names = ", ".join(f"`{o}`" for o in action.option_strings) or f"`{_metavar(action)}`"
        required = " (required)" if action.required and action.option_strings else ""
        help_text = (action.help or "").replace("|", "\\|")
        lines.append(f"| {names}{required} | {_value(action)} | {_default(action)} | {help_text} |")
    for group in parser._mutually_exclusive_groups:
        options = " and ".join(f"`{a.option_strings[0]}`" for a in group._group_actions)
        lines += ["", f"{options} exclude each other."]
    return lines


def _metavar(action: argparse.Action) -> str:
    # argparse's own default: the name for a positional, the name in capitals for an option.
    name = str(action.metavar or (action.dest.upper() if action.option_strings else action.dest))
    return f"{name}..." if action.nargs == "+" else name


def _value(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "flag" if action.option_strings else ""
    if isinstance(action, argparse._SubParsersAction):
        return "a command (required)" if action.required else "a command"
    kind = getattr(action.type, "__name__", "") if action.type else ""
    if not kind or kind.startswith("_"):  # a private checker such as `_shard` reads text
        kind = "text"
    repeat = ", repeatable" if isinstance(action, argparse._AppendAction) else ""
    return f"`{_metavar(action)}` ({kind}{repeat})"


def _default(action: argparse.Action) -> str:
    if action.default in (None, False, argparse.SUPPRESS):
        return ""
    # A path shows as typed, not as `PosixPath(...)`, which would differ on Windows.
    shown = str(action.default) if isinstance(action.default, Path) else repr(action.default)
    return f"`{shown}`".replace("|", "\\|").replace("\n", "\\n")


def test_the_reference_lists_every_argument_as_the_parser_has_it() -> None:
    assert REFERENCE.read_text(encoding="utf-8") == reference(), (
        f"docs/cli.md is stale: run `{REGENERATE}` and review the difference"
    )


if __name__ == "__main__":
    REFERENCE.parent.mkdir(exist_ok=True)
    REFERENCE.write_text(reference(), encoding="utf-8")
    print(f"wrote {REFERENCE}", file=sys.stderr)
