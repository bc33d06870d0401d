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
from ._syntax import syntax_issue

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
        return None, locations, [syntax_issue(display_name, text, exc)]
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
