"""YAML syntax errors in a pipeline author's words, with the line and an indentation hint.

ruamel speaks of its parser's states ("expected <block end>, but found
'<block mapping start>'"); what went wrong is nearly always indentation, a
missing ': ', or an unclosed quote or bracket. Each rule below reads ruamel's
problem and the lines around its mark, and says which line to change and how.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ruamel.yaml import YAML
from ruamel.yaml.error import MarkedYAMLError, StreamMark, YAMLError
from ruamel.yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from .._errors import ConfigIssue

__all__ = ["syntax_issue"]


def syntax_issue(display_name: str, text: str, exc: MarkedYAMLError) -> ConfigIssue:
    """One issue for a YAML syntax error: where to look, and what to do there."""
    said = _plain_words(exc, text)
    if said is None:
        said = _syntax_message(exc), _position(exc.problem_mark or exc.context_mark)
    message, (line, column) = said
    message = f"YAML syntax: {message}"
    if _unquoted_reference(text, exc):
        # Inside `{...}`, a `{` opens a mapping: ${VAR} there must be quoted.
        message += '; quote a ${VAR} inside a {...} mapping: path: "${VAR}"'
    return ConfigIssue(display_name, line, column, "", message)


_UNQUOTED_REFERENCE = re.compile(r"""(?<!["'$])\$\{""")


def _unquoted_reference(text: str, exc: MarkedYAMLError) -> bool:
    """Whether the lines of the error, or of what it was parsing, hold an unquoted ``${``.

    A mark may lie past the last line: a file that ends inside ``{...}`` fails
    at the end of the stream, on the line after its last newline.
    """
    lines = text.splitlines()
    marks = (exc.problem_mark, exc.context_mark)
    return any(
        mark is not None
        and 0 <= mark.line < len(lines)
        and _UNQUOTED_REFERENCE.search(lines[mark.line]) is not None
        for mark in marks
    )


# The lines above an error ------------------------------------------------------------

# `key:` or `key: value` at the start of what a line holds (a quoted key too).
_KEY = re.compile(r"""("[^"]*"|'[^']*'|[^\s#'"\-?:,\[\]{}][^#]*?|-[^\s#][^#]*?):(?:\s+(.*))?$""")


@dataclass(frozen=True)
class _Start:
    """Where something starts on a line: a list's '-', a key, or a plain value."""

    line: int  # 1-based
    column: int  # 0-based: the spaces before it
    what: str  # as the message names it: `name:`, '-' or the value
    is_key: bool
    has_value: bool  # a key with its value on the same line

    def named(self) -> str:
        return f"{self.what} on line {self.line}"


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _starts(number: int, line: str) -> list[_Start]:
    """What starts on line ``number``, outermost first: `  - name: x` gives '-' at 2, `name:` at 4."""
    starts = []
    column = _indent(line)
    while line.startswith("- ", column) or line[column:].rstrip() == "-":
        starts.append(_Start(number, column, "'-'", is_key=False, has_value=True))
        column += 1 + _indent(line[column + 1 :])
    rest = line[column:].rstrip()
    if rest and not rest.startswith("#"):
        key = _KEY.match(rest)
        if key:
            value = (key.group(2) or "").strip()
            has_value = bool(value) and not value.startswith("#")
            starts.append(_Start(number, column, f"`{key.group(1)}:`", True, has_value))
        else:
            shown = rest if len(rest) <= 30 else rest[:29] + "…"
            starts.append(_Start(number, column, f"`{shown}`", is_key=False, has_value=True))
    return starts


def _open_starts(lines: list[str], number: int) -> list[_Start]:
    """What line ``number`` (1-based) may line up with, innermost first.

    Walking up from the line above, each start to the left of every start
    after it opens a block that line ``number`` may continue; the walk stops
    at the left margin.
    """
    found: list[_Start] = []
    for above in range(min(number, len(lines) + 1) - 1, 0, -1):
        for start in reversed(_starts(above, lines[above - 1])):
            if not found or start.column < found[-1].column:
                found.append(start)
        if found and found[-1].column == 0:
            break
    return found


def _indentation(lines: list[str], number: int) -> str | None:
    """Why line ``number`` fits none of the blocks above it, and how to indent it; None
    when it lines up with one (the fault is then elsewhere)."""
    if not 1 <= number <= len(lines):
        return None
    here = _indent(lines[number - 1])
    starts = _open_starts(lines, number)
    if not starts or any(start.column == here for start in starts):
        return None
    inner = starts[0]
    said = f"line {number} is indented {here} space{'s' * (here != 1)}"
    if here > inner.column:
        if inner.is_key and not inner.has_value:
            return None  # a block nested under `key:`: deeper is right
        dash = " (and a list item needs a space after its '-')" * inner.what.startswith("`-")
        return (
            f"{said}, more than {inner.named()} ({inner.column}), so it reads as the rest of "
            f"line {inner.line}'s value; indent it to match {inner.named()} "
            f"({inner.column} spaces){dash}"
        )
    deeper = [start for start in starts if start.column > here][-1]
    shallower = [start for start in starts if start.column < here]
    if not shallower:
        return (
            f"{said}, less than {deeper.named()} ({deeper.column}); indent it {deeper.column} "
            f"spaces to match it"
        )
    return (
        f"{said}, less than {deeper.named()} ({deeper.column}) and more than "
        f"{shallower[0].named()} ({shallower[0].column}), so it lines up with neither; indent "
        f"it {deeper.column} spaces to match {deeper.named()}, or {shallower[0].column} to "
        f"match {shallower[0].named()}"
    )


def _no_colon(lines: list[str], number: int) -> str | None:
    """When line ``number`` lines up with a plain value above it, which YAML reads as
    going on over the lines below: that line is a key missing its ':'."""
    if not 1 <= number <= len(lines):
        return None
    here = _indent(lines[number - 1])
    starts = _open_starts(lines, number)
    if not starts or starts[0].column != here or starts[0].is_key or starts[0].what == "'-'":
        return None
    value = starts[0]
    return (
        f"{value.what} on line {value.line} has no ': ', so YAML reads line {number} as more of "
        f"it; write line {value.line} as `key: value`"
    )


# The rules ------------------------------------------------------------------------------

_SAME_COLUMN = "the keys of one mapping, and the items of one list, start in the same column"
_CLOSERS = {"flow mapping": ("{...}", "}"), "flow sequence": ("[...]", "]")}
_RESERVED = ("@", "`", "%")  # a value may not start with these unquoted
# What ruamel was scanning, and the character that began it.
_INDICATORS = {"directive": "%", "tag": "!", "alias": "*", "anchor": "&"}


def _position(mark: StreamMark | None) -> tuple[int, int]:
    return (mark.line + 1, mark.column + 1) if mark else (1, 1)


def _at(mark: StreamMark | None) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark else "above"


def _plain_words(exc: MarkedYAMLError, text: str) -> tuple[str, tuple[int, int]] | None:
    """The common syntax errors in plain words, with the line and column to report them
    at; None for the others."""
    problem, context = exc.problem or "", exc.context or ""
    mark, opened = exc.problem_mark, exc.context_mark
    lines = text.splitlines()
    number = mark.line + 1 if mark else 0
    line = lines[number - 1] if 1 <= number <= len(lines) else ""
    at = _position(mark)
    if problem.startswith("expected <block end>") and opened is not None:
        return _block_end(problem, context, lines, number, line, mark, opened), at
    if problem == "mapping values are not allowed here":
        said = _indentation(lines, number) or _no_colon(lines, number)
        if said:  # the line's own start is what to change
            return said, (number, _indent(line) + 1)
        return (
            f"a ': ' on line {number} where no key may start: quote a value that holds ': ', "
            "or put the key on a line of its own"
        ), at
    if problem == "could not find expected ':'" and opened is not None:
        return _missing_colon(lines, opened), _position(opened)
    if problem == "found unexpected end of stream" and "quoted scalar" in context:
        return (
            "the quoted string that starts here never ends (the file ends inside it): "
            "close its quote"
        ), _position(opened or mark)
    if problem.startswith("found unknown escape character") and "double-quoted" in context:
        escape = problem.rpartition(" ")[2].strip("'")
        return (
            f"'\\{escape}' is no escape YAML knows, in the double-quoted string at {_at(opened)}: "
            "write a backslash as '\\\\', or use single quotes, where '\\' is plain"
        ), at
    for kind, (brackets, closer) in _CLOSERS.items():
        if kind in context and problem.startswith("expected ','"):
            if problem.endswith("'<stream end>'"):
                return (
                    f"the {brackets} that opens here is never closed (the file ends inside "
                    f"it): close it with '{closer}'"
                ), _position(opened)
            return (
                f"the {brackets} that opens at {_at(opened)} is not closed where line {number} "
                f"goes on: close it with '{closer}', and quote a value that holds ', ' or ': '"
            ), at
    if problem.startswith("found undefined alias"):
        name = problem.rpartition(" ")[2].strip("'")
        return (
            f"*{name} reads as a reference to an anchor &{name}, and none is defined above "
            f"it: quote a value that starts with '*' (\"*{name}\")"
        ), at
    if problem.startswith("found duplicate key") and opened is not None:
        return _duplicate(problem, text, opened), at
    if problem.startswith("found character") and "cannot start any token" in problem:
        return _cannot_start(problem, line, mark), at
    if problem == "but found another document":
        return (
            f"a second document starts on line {number} ('---'): a pipeline file holds one; "
            "remove the '---', or split the file"
        ), at
    if problem.startswith("expected the node content, but found "):
        return _no_value(problem.rpartition("but found ")[2].strip("'"), number), at
    indicator = _INDICATORS.get(context.rpartition(" ")[2])  # "while scanning an alias"
    if indicator and context.startswith("while "):
        what = context.rpartition(" ")[2]
        return f"'{indicator}' starts a YAML {what} here: quote a value that starts with it", at
    if "block scalar" in context and problem.startswith("expected chomping"):
        return (
            "after '|' or '>' only '+', '-' or an indentation digit may follow on its line: "
            "start the text on the next line, indented"
        ), at
    return None


def _block_end(
    problem: str,
    context: str,
    lines: list[str],
    number: int,
    line: str,
    mark: StreamMark | None,
    opened: StreamMark,
) -> str:
    """A line that does not go on with the block being read."""
    column = mark.column if mark else 0
    found = problem.rpartition("but found ")[2].strip("'")
    if line and column > _indent(line):  # the line goes on after something that ended
        if found in ("]", "}"):
            return _no_value(found, number)
        before = line[:column].rstrip()
        if before.endswith(('"', "'")):
            return (
                f"line {number} goes on after the quoted string that ends at column "
                f"{len(before)}: quote the whole value, or start the rest on a line of its own"
            )
        return (
            f"line {number} goes on after its value at column {column + 1}: quote the whole "
            "value, or start the rest on a line of its own"
        )
    said = _indentation(lines, number)
    if said:
        return said
    begun = opened.line + 1
    kind = "mapping" if "mapping" in context else "list"
    if found == "-":
        return f"line {number} starts a list item ('-') where the mapping from line {begun} expects a key"
    here = _indent(line)
    aligned = [start for start in _open_starts(lines, number) if start.column == here]
    if aligned and aligned[0].what == "'-'":
        return (
            f"line {number} lines up with the '-' of the list item on line {aligned[0].line}, "
            f"but is no item: start it with '- ' for a new item, or indent it to go on with "
            f"the item on line {aligned[0].line}"
        )
    return f"line {number} does not continue the {kind} from line {begun}: {_SAME_COLUMN}"


def _no_value(found: str, number: int) -> str:
    """Where a value should be and something else is."""
    if found == ",":
        return "a ',' with no value before it: remove it, or write the value"
    if found in ("]", "}"):
        return f"a '{found}' on line {number} closes nothing that is open: remove it"
    if found in ("<stream end>", "<document end>"):
        return "the file ends where a value should be: write it, and close any '[' or '{' open"
    return f"{found!r} where a value should be: quote the value"


def _missing_colon(lines: list[str], opened: StreamMark) -> str:
    """A key with no ': ' after it: `key value`, `key:value`, or an unclosed quote."""
    number, column = opened.line + 1, opened.column
    written = lines[number - 1][column:].split(" #")[0].strip() if number <= len(lines) else ""
    glued = re.match(r"([^\s:]+):(\S.*)$", written)
    if glued:
        key, value = glued.groups()
        return (
            f"`{written}` on line {number} has no space after its ':'; a key is followed by "
            f"': ': write `{key}: {value}`"
        )
    if written.count('"') % 2 or written.count("'") % 2:
        return f"the quoted string on line {number} is not closed: close its quote"
    return f"`{written}` on line {number} has no ':' after its key: write `key: value`"


def _duplicate(problem: str, text: str, opened: StreamMark) -> str:
    """A key written twice in one mapping; ruamel's message echoes both values, which
    may be secrets, so this one names the key and the lines only."""
    found = re.match(r'found duplicate key "(.*)" with value ', problem, re.DOTALL)
    key = found.group(1) if found else "?"
    lines = sorted(_key_lines(text, opened, key))
    where = " and ".join(f"line {line}" for line in lines[:2]) or "twice"
    return (
        f"the key {key!r} appears twice in the mapping that starts at {_at(opened)} "
        f"({where}): a key may appear once in a mapping; keep one"
    )


def _key_lines(text: str, opened: StreamMark, key: str) -> list[int]:
    """The lines of ``key`` in the mapping that starts at ``opened``.

    Composing builds the nodes without constructing them, where ruamel checks duplicates.
    """
    try:
        stack: list[Node] = [YAML(typ="rt", pure=True).compose(text)]
    except (YAMLError, RecursionError):
        return []
    position = (opened.line, opened.column)
    while stack:
        node = stack.pop()
        if isinstance(node, MappingNode):
            if (node.start_mark.line, node.start_mark.column) == position:
                return [
                    name.start_mark.line + 1
                    for name, _ in node.value
                    if isinstance(name, ScalarNode) and str(name.value) == key
                ]
            stack += [part for pair in node.value for part in pair]
        elif isinstance(node, SequenceNode):
            stack += node.value
    return []


def _cannot_start(problem: str, line: str, mark: StreamMark | None) -> str:
    """A character that may not begin a token: a tab, or a reserved character."""
    character = problem.partition("'")[2].rpartition("'")[0]
    column = mark.column if mark else 0
    if character == "\\t":
        if not line[:column].strip():
            return "a tab in the indentation: indent with spaces, not tabs"
        return "a tab where a value or key should start: use spaces, not tabs"
    if character in _RESERVED:
        return f"a value cannot start with '{character}', which YAML reserves: quote the value"
    return f"a value cannot start with {character!r}: quote the value"


def _syntax_message(exc: MarkedYAMLError) -> str:
    """ruamel's problem first, then what it was parsing and where that started."""
    message = exc.problem or exc.context or "invalid YAML"
    if exc.problem and exc.context:
        where = f" at {_at(exc.context_mark)}" if exc.context_mark else ""
        message += f" ({exc.context}{where})"
    return message
