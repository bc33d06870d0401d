"""The argument parser every command group adds its commands to."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from .. import __version__
from ._arguments import ArgumentParser

Handler = Callable[[argparse.Namespace], int]


class Commands:
    """The `ragflow-config` parser; each command group registers its sub-commands here."""

    def __init__(self) -> None:
        self.parser = ArgumentParser(
            prog="ragflow-config",
            description="Knowledge bases for LLM agents, defined in YAML pipeline files.",
        )
        self.parser.add_argument("--version", action="version", version=__version__)
        _add_global_flags(self.parser, default=False)
        self._commands = self.parser.add_subparsers(
            dest="command", required=True, metavar="COMMAND"
        )
        self._subparsers: list[argparse.ArgumentParser] = []

    def add(self, name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        sub = self._commands.add_parser(name, help=help, description=help)
        sub.set_defaults(handler=handler)
        self._subparsers.append(sub)
        return sub

    def finish(self) -> argparse.ArgumentParser:
        """The parser, once every command is registered: the global flags go on each
        command too, after its own, so ``run FILE -v`` works as ``-v run FILE`` does."""
        for sub in self._subparsers:
            _add_global_flags(sub, default=argparse.SUPPRESS)
        return self.parser


def _add_global_flags(parser: argparse.ArgumentParser, *, default: object) -> None:
    """``-v``/``--verbose`` and ``-q``/``--quiet``. On a command their default is
    SUPPRESS, so that not giving them there keeps what was given before it."""
    parser.add_argument(
        "-v", "--verbose", action="store_true", default=default, help="log progress details"
    )
    quiet = "errors only: no warnings and no progress display"
    try:
        parser.add_argument("-q", "--quiet", action="store_true", default=default, help=quiet)
    except argparse.ArgumentError:  # a command whose own -q came first (chat's --question)
        parser.add_argument("--quiet", action="store_true", default=default, help=quiet)
