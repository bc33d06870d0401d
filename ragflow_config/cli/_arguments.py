"""Argument types that bound every value a command line may give.

Each is an ``argparse`` type: it returns the value, or raises
``argparse.ArgumentTypeError`` with the accepted range, so a bad value exits 2
with the usage and ``argument --flag: ...`` instead of a traceback later on.
``top_k``, ``score_threshold`` and a query are checked by the checks the HTTP
API and the MCP tool share (:mod:`ragflow_config._search_input`): the CLI
refuses what they refuse, with their words.

Each type's ``__name__`` says what it takes; ``docs/cli.md`` shows it.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Callable, Sequence
from typing import Any, NoReturn

from .._search_input import (
    MAX_TOP_K,
    SearchInputError,
    checked_query,
    checked_score_threshold,
    checked_top_k,
)
from ._output import print_json


def _named(name: str, check: Callable[[str], Any]) -> Callable[[str], Any]:
    check.__name__ = check.__qualname__ = name
    return check


def _integer(text: str) -> int | None:
    """``text`` as an integer, or ``None`` when it is not one (``1.5``, ``abc``, 5000 digits)."""
    try:
        return int(text)
    except ValueError:
        return None


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def int_between(low: int, high: int | None = None) -> Callable[[str], int]:
    """An integer from ``low`` to ``high`` (no upper bound when ``high`` is ``None``)."""
    expected = f"an integer from {low} to {high}" if high is not None else f"an integer >= {low}"

    def check(text: str) -> int:
        value = _integer(text)
        if value is None or value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"expected {expected}, not {text!r:.40}")
        return value

    return _named(expected.removeprefix("an "), check)


def float_between(low: float, high: float) -> Callable[[str], float]:
    """A finite number from ``low`` to ``high``."""
    expected = f"a number from {low:g} to {high:g}"

    def check(text: str) -> float:
        value = _number(text)
        if value is None or not math.isfinite(value) or not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {expected}, not {text!r:.40}")
        return value

    return _named(expected.removeprefix("a "), check)


_UNITS = {"s": 1, "m": 60, "h": 3600}


def duration(low: float, high: float) -> Callable[[str], float]:
    """A time span in seconds, written ``30s``, ``5m``, ``1h`` or a bare number of seconds."""
    expected = f"a duration from {low:g}s to {high:g}s, such as 30s, 5m or 1h"

    def check(text: str) -> float:
        number, unit = (text[:-1], _UNITS[text[-1]]) if text[-1:] in _UNITS else (text, 1)
        value = _number(number)
        if value is None or not math.isfinite(value) or not low <= value * unit <= high:
            raise argparse.ArgumentTypeError(f"expected {expected}, not {text!r:.40}")
        return value * unit

    return _named("30s, 5m or 1h", check)


def _top_k(text: str) -> int:
    value = _integer(text)
    try:
        return checked_top_k(text if value is None else value)
    except SearchInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _score_threshold(text: str) -> float | None:
    value = _number(text)
    try:
        return checked_score_threshold(text if value is None else value)
    except SearchInputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


top_k = _named(f"integer from 1 to {MAX_TOP_K}", _top_k)
score_threshold = _named("finite number", _score_threshold)


def text_not_blank(name: str) -> Callable[[str], str]:
    """Text with something besides white space, as :func:`checked_query` wants a query."""

    def check(text: str) -> str:
        try:
            return checked_query(text, name=name)
        except SearchInputError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return _named("text, not blank", check)


class JoinedQuery(argparse.Action):
    """Words joined by spaces into one query (``nargs="+"``), refused when blank.

    The words are checked together: ``search f kb "" x`` asks for ``" x"``, a
    query; ``search f kb "" " "`` asks for nothing and exits 2.
    """

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        words = [values] if isinstance(values, str) else list(values or [])
        query = " ".join(map(str, words))
        try:
            checked_query(query)
        except SearchInputError as exc:
            raise argparse.ArgumentError(self, str(exc)) from None
        setattr(namespace, self.dest, query)


class ArgumentParser(argparse.ArgumentParser):
    """``argparse``'s parser, without one way around the types above.

    Python 3.11's ``argparse`` drops a ``--`` it is given as an option's value
    (``--workers=--``) and hands the command an empty list instead of refusing:
    no type sees it, and the command failed later with a traceback.
    """

    # Whether the command line asked for --json: then a refused one is reported as the
    # JSON error every command prints, not as a usage line on stderr.
    _json_errors = False

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        words = list(sys.argv[1:] if args is None else args)
        self._json_errors = "--json" in words[: words.index("--") if "--" in words else None]
        return super().parse_known_args(words, namespace)

    def error(self, message: str) -> NoReturn:
        if self._json_errors:
            print_json({"error": {"message": f"{self.prog}: {message}"}})
            self.exit(2)
        super().error(message)

    def _get_values(self, action: argparse.Action, arg_strings: list[str]) -> Any:
        if action.option_strings and action.nargs is None and arg_strings == ["--"]:
            raise argparse.ArgumentError(action, "expected one argument, not '--'")
        return super()._get_values(action, arg_strings)
