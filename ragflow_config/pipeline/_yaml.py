"""Reading a pipeline file: YAML with the line and column of every node, and ``${VAR}`` values."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.nodes import MappingNode, SequenceNode
from ruamel.yaml.reader import ReaderError

from .._errors import ConfigIssue, format_path

JsonPath = tuple[str | int, ...]

# Deeper than any pipeline file needs; a limit, so a `[[[[...` file is an issue
# rather than a RecursionError in the checks that walk the data.
MAX_DEPTH = 64

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}|\$\$")


@dataclass
class Locations:
    """Where each node of a document sits: 1-based line and column, by JSON path."""

    file: str
    values: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)
    keys: dict[JsonPath, tuple[int, int]] = field(default_factory=dict)
    # Strings that came from the environment, as written in the file: messages echo
    # values, and a variable may hold a secret, so issues show the reference instead.
    from_environment: dict[JsonPath, tuple[str, str]] = field(default_factory=dict)

    def of_value(self, path: JsonPath) -> tuple[int, int]:
        """The position of the node at ``path``, or of its nearest ancestor that exists."""
        for depth in range(len(path), -1, -1):
            found = self.values.get(path[:depth])
            if found:
                return found
        return (1, 1)

    def of_key(self, path: JsonPath) -> tuple[int, int]:
        """The position of the mapping key that leads to ``path``."""
        return self.keys.get(path) or self.of_value(path)

    def issue(self, path: JsonPath, message: str, *, at_key: bool = False) -> ConfigIssue:
        line, column = self.of_key(path) if at_key else self.of_value(path)
        for where, (written, value) in self.from_environment.items():
            if where[: len(path)] == path:
                message = message.replace(repr(value), repr(written))
        return ConfigIssue(self.file, line, column, format_path(path), message)


def load_yaml(path: Path, display_name: str) -> tuple[Any, Locations, list[ConfigIssue]]:
    """Parse ``path``; return plain data, node locations and any issues found."""
    locations = Locations(display_name)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        return (
            None,
            locations,
            [ConfigIssue(display_name, 1, 1, "", f"cannot read: {exc.strerror}")],
        )
    except UnicodeDecodeError as exc:
        return None, locations, [ConfigIssue(display_name, 1, 1, "", f"not UTF-8 text: {exc}")]
    except ValueError as exc:  # a path holding a NUL character names no file
        return None, locations, [ConfigIssue(display_name, 1, 1, "", f"cannot read: {exc}")]
    try:
        document = YAML(typ="rt", pure=True).load(text)
    except MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        message = f"YAML syntax: {_plain_words(exc, text) or _syntax_message(exc)}"
        if _unquoted_reference(text, exc):
            # Inside `{...}`, a `{` opens a mapping: ${VAR} there must be quoted.
            message += '; quote a ${VAR} inside a {...} mapping: path: "${VAR}"'
        return None, locations, [ConfigIssue(display_name, line, column, "", message)]
    except ReaderError as exc:  # a character YAML does not allow: a NUL, a control character
        return None, locations, [_reader_issue(display_name, text, exc)]
    except YAMLError as exc:
        return None, locations, [ConfigIssue(display_name, 1, 1, "", f"YAML syntax: {exc}")]
    except TypeError:  # ruamel hashes a key that is a mapping holding a mapping or a list
        line, column = _unhashable_key(text)
        message = "YAML syntax: this key is a mapping or a list; a key is a plain name"
        return None, locations, [ConfigIssue(display_name, line, column, "", message)]
    except RecursionError:  # ruamel reads nested nodes by recursion: `[[[[...` a thousand deep
        message = (
            f"YAML nested too deeply to read; a pipeline file needs at most {MAX_DEPTH} levels"
        )
        return None, locations, [ConfigIssue(display_name, 1, 1, "", message)]
    locations.values[()] = (1, 1)
    issues: list[ConfigIssue] = []
    data = _plain(document, (), locations, issues)
    return data, locations, issues


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


def _unhashable_key(text: str) -> tuple[int, int]:
    """Line and column of the first key that is itself a mapping or a list (1, 1 if none).

    Composing builds the nodes without the Python objects, so no key is hashed.
    """
    try:
        stack = [YAML(typ="rt", pure=True).compose(text)]
    except (YAMLError, RecursionError):
        return (1, 1)
    while stack:
        node = stack.pop()
        if isinstance(node, MappingNode):
            for key, value in node.value:
                if isinstance(key, (MappingNode, SequenceNode)):
                    return key.start_mark.line + 1, key.start_mark.column + 1
                stack += [key, value]
        elif isinstance(node, SequenceNode):
            stack += node.value
    return (1, 1)


def _reader_issue(display_name: str, text: str, exc: ReaderError) -> ConfigIssue:
    """The character's line and column, on one line (ruamel's message adds a second)."""
    position = exc.position if isinstance(exc.position, int) else 0
    position = min(max(position, 0), len(text))
    line = text.count("\n", 0, position) + 1
    column = position - (text.rfind("\n", 0, position) + 1) + 1
    character = exc.character
    what = f"#x{character:04x}" if isinstance(character, int) else repr(character)
    message = f"YAML syntax: unacceptable character {what}: {exc.reason}"
    return ConfigIssue(display_name, line, column, "", message)


_CLOSERS = {"flow mapping": ("{...}", "}"), "flow sequence": ("[...]", "]")}


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _deeper_than_above(lines: list[str], number: int) -> str:
    """ "line 2 is indented 2 spaces, more than line 1 (0)" when line ``number`` (1-based)
    is indented deeper than the line above it that holds something: read as a
    continuation of that line's value, its ``key:`` is a ': ' inside a value."""
    if not 1 <= number <= len(lines):
        return ""
    here = _indent(lines[number - 1])
    for above in range(number - 1, 0, -1):
        line = lines[above - 1]
        if line.strip() and not line.lstrip().startswith("#"):
            there = _indent(line)
            if here <= there:
                return ""
            return f"line {number} is indented {here} spaces, more than line {above} ({there})"
    return ""


def _plain_words(exc: MarkedYAMLError, text: str) -> str | None:
    """The common syntax errors said in a pipeline author's words, or None for the others.

    ruamel speaks of its parser's states ("expected <block end>, but found
    '<block mapping start>'"); what went wrong is nearly always indentation,
    a missing ':' or an unclosed quote or bracket.
    """
    problem, context = exc.problem or "", exc.context or ""
    mark, opened = exc.problem_mark, exc.context_mark
    line = mark.line + 1 if mark else 0
    start = f"line {opened.line + 1}, column {opened.column + 1}" if opened else "above"
    lines = text.splitlines()
    same_column = "the keys of one mapping, and the items of one list, start in the same column"
    if problem.startswith("expected <block end>") and opened is not None:
        kind, parts = ("mapping", "keys") if "mapping" in context else ("list", "items")
        here = _indent(lines[line - 1]) if 1 <= line <= len(lines) else opened.column
        begun = opened.line + 1
        if problem.endswith("found '-'") and here == opened.column:
            return f"line {line} starts a list item ('-') where the mapping from line {begun} expects a key"
        if here != opened.column:
            return (
                f"line {line} is indented {here} spaces, which lines up with no block above it: "
                f"the {parts} of the {kind} from line {begun} are indented {opened.column}"
            )
        return f"line {line} does not continue the {kind} from line {begun}: {same_column}"
    if problem == "mapping values are not allowed here":
        indented = _deeper_than_above(lines, line)
        if indented:
            return f"{indented}: {same_column}"
        return (
            f"a ': ' on line {line} where no key may start: quote a value that holds ': ', "
            "or put the key on a line of its own"
        )
    if problem == "could not find expected ':'":
        return (
            f"the key at {start} has no ':' after it (write key: value), "
            "or a quoted string there is not closed"
        )
    if problem == "found unexpected end of stream" and "quoted scalar" in context:
        return f"the file ends inside the quoted string that opens at {start}: close its quote"
    for kind, (brackets, closer) in _CLOSERS.items():
        if kind in context and problem.startswith("expected ','"):
            if problem.endswith("'<stream end>'"):
                return f"the file ends inside the {brackets} that opens at {start}: close it with '{closer}'"
            return (
                f"the {brackets} that opens at {start} is not closed where line {line} goes on: "
                f"close it with '{closer}', and quote a value that holds ', ' or ': '"
            )
    if problem.startswith("found undefined alias"):
        name = problem.rpartition(" ")[2].strip("'")
        return f"*{name} refers to no anchor &{name} defined above it"
    return None


def _syntax_message(exc: MarkedYAMLError) -> str:
    """ruamel's problem first, then what it was parsing and where that started."""
    message = exc.problem or exc.context or "invalid YAML"
    if "'\\t'" in message:
        message += "; indent with spaces, not tabs"
    if exc.problem and exc.context:
        mark = exc.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        message += f" ({exc.context}{where})"
    return message


def _positions(node: CommentedMap, key: Any) -> tuple[int, int, int, int]:
    """Key line, key column, value line, value column (0-based) of ``key``.

    A key merged in with ``<<: *anchor`` is written in the anchored mapping.
    """
    own = node.lc.data or {}  # None when every key is merged in
    if key in own:
        key_line, key_column, value_line, value_column = own[key]
        return key_line, key_column, value_line, value_column
    for merged in getattr(node, "merge", None) or []:
        if isinstance(merged, CommentedMap) and key in merged:
            return _positions(merged, key)
    return node.lc.line, node.lc.col, node.lc.line, node.lc.col


def _plain(node: Any, path: JsonPath, locations: Locations, issues: list[ConfigIssue]) -> Any:
    """Plain Python data from ruamel's nodes, recording positions and expanding ``${VAR}``."""
    if len(path) > MAX_DEPTH and isinstance(node, (CommentedMap, CommentedSeq)):
        issues.append(locations.issue(path, f"nested more than {MAX_DEPTH} levels deep"))
        return None
    if isinstance(node, CommentedMap):
        result: dict[str, Any] = {}
        for key in node:
            line, column, value_line, value_column = _positions(node, key)
            child: JsonPath = (*path, str(key))
            locations.keys[child] = (line + 1, column + 1)
            locations.values[child] = (value_line + 1, value_column + 1)
            if not isinstance(key, str):
                issues.append(
                    locations.issue(child, f"keys must be strings, got {key!r}", at_key=True)
                )
            result[str(key)] = _plain(node[key], child, locations, issues)
        return result
    if isinstance(node, CommentedSeq):
        items = []
        for index, item in enumerate(node):
            line, column = node.lc.item(index)
            item_path: JsonPath = (*path, index)
            locations.values[item_path] = (line + 1, column + 1)
            items.append(_plain(item, item_path, locations, issues))
        return items
    if isinstance(node, str):
        return _expand(str(node), path, locations, issues)
    if hasattr(node, "real") and not isinstance(node, bool):
        return int(node) if isinstance(node, int) else float(node)
    return node


def _expand(text: str, path: JsonPath, locations: Locations, issues: list[ConfigIssue]) -> Any:
    """Replace ``${VAR}`` / ``${VAR:-default}``; ``$$`` is a literal ``$``.

    A value that is one reference as a whole takes the YAML type of what it
    expands to, so ``port: ${PG_PORT}`` gives a number.
    """
    if "$" not in text:
        return text
    variables: list[str] = []

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, default = match.group(1), match.group(2)
        variables.append(name)
        value = os.environ.get(name)
        if value is None or (value == "" and default is not None):
            if default is None:
                issues.append(
                    locations.issue(
                        path,
                        f"environment variable {name} is not set (write ${{{name}:-default}} "
                        "to give a default)",
                    )
                )
                return ""
            return default
        return value

    expanded = _REFERENCE.sub(replace, text)
    if variables:  # every reference, typed or not: `validate --check-env` lists them
        locations.from_environment[path] = (text, expanded)
    whole = _REFERENCE.fullmatch(text)
    if whole and whole.group(0) != "$$" and expanded.strip():
        try:
            typed = YAML(typ="safe", pure=True).load(expanded)
        except YAMLError:  # the value is text that is not a YAML scalar, e.g. "[abc"
            typed = None
        if isinstance(typed, (int, float, bool)):
            return typed
    return expanded
