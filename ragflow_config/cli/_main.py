"""``main``: parse the command line, run the command, report failures one way."""

from __future__ import annotations

import argparse
import logging
import os
import sys

from .._errors import ConfigError, MissingExtraError, RagflowError
from . import (
    _chat_command,
    _config_commands,
    _copy_command,
    _eval_command,
    _index_commands,
    _init_command,
    _kb_commands,
    _serve_command,
)
from ._output import (
    EXIT_CLOSED_PIPE,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    Interrupted,
    UsageError,
    print_error,
)
from ._parser import Commands


def _usage_errors() -> tuple[type[Exception], ...]:
    """What exits 2 besides argparse's errors and an invalid file: the command line or the
    file names something that is not there (a knowledge base is a KeyError, a pipeline
    file or source folder a FileNotFoundError), or the environment lacks what the file
    needs. Every other RagflowError happened against the store or a model: exit 1.

    Imported when an error is being reported, not at start-up: the modules that define
    them pull in Pydantic and the pipeline, which `--version` and `--help` never need.
    """
    from ..credential import MissingSecretError
    from ..pipeline import UnknownTypeError
    from ..pipeline._copy import CopySourceNotAStore
    from ..sources import SourceOutsideError

    return (
        UsageError,
        KeyError,
        FileNotFoundError,
        UnknownTypeError,
        SourceOutsideError,
        CopySourceNotAStore,
        MissingSecretError,
        MissingExtraError,
    )


def build_parser() -> argparse.ArgumentParser:
    """Every command's arguments: what `main` reads and `docs/cli.md` lists."""
    commands = Commands()
    for group in (
        _init_command,
        _config_commands,
        _index_commands,
        _kb_commands,
        _copy_command,
        _eval_command,
        _chat_command,
        _serve_command,
    ):
        group.register(commands)
    return commands.finish()


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        # -q wins over -v: a script that asks for quiet gets it.
        level=logging.ERROR if args.quiet else logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    as_json = getattr(args, "json", False)
    try:
        return int(args.handler(args))
    except ConfigError as exc:
        if as_json:
            print_error("the pipeline file is invalid", True, exc.issues)
        else:
            for issue in exc.issues:
                print(issue, file=sys.stderr)
        return EXIT_USAGE
    except (RagflowError, KeyError, FileNotFoundError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print_error(message, as_json)
        return EXIT_USAGE if isinstance(exc, _usage_errors()) else EXIT_FINDINGS
    except BrokenPipeError:
        # The reader is gone (`list | head`): nothing more to say, and the
        # interpreter must not try to flush into the closed pipe at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_CLOSED_PIPE
    except Interrupted as exc:
        if as_json:
            print_error(str(exc), as_json)
        else:
            print(exc, file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        if as_json:  # --json promises one document, an interruption included
            print_error("interrupted", as_json)
        return EXIT_INTERRUPTED
