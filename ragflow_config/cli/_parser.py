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
        self.parser.add_argument(
            "-v", "--verbose", action="store_true", help="log progress details"
        )
        self._commands = self.parser.add_subparsers(
            dest="command", required=True, metavar="COMMAND"
        )

    def add(self, name: str, handler: Handler, help: str) -> argparse.ArgumentParser:
        sub = self._commands.add_parser(name, help=help, description=help)
        sub.set_defaults(handler=handler)
        return sub
