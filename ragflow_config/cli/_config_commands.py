"""Commands about pipeline files and types: validate, schema, types.

Like every command module, this one imports the pipeline inside its handlers:
``--version``, ``--help`` and every other command start without it.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ._output import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, UsageError, print_json
from ._parser import Commands

if TYPE_CHECKING:
    from .._errors import ConfigIssue
    from ..pipeline._check_env import EnvironmentCheck
    from ..pipeline._registry import Kind


def register(commands: Commands) -> None:
    validate = commands.add("validate", _validate, "check pipeline files and report every error")
    validate.add_argument("files", nargs="+", type=Path, metavar="FILE", help="pipeline files")
    validate.add_argument(
        "--json",
        action="store_true",
        help='print {"files": [...], "issues": [...]}, with each file\'s checks under --check-env',
    )
    validate.add_argument(
        "--check-env",
        action="store_true",
        help="then check what a run needs, writing nothing: every variable the file names is "
        "set, every store opens (or its server answers), every embedding model embeds a text",
    )

    schema = commands.add(
        "schema", _schema, "write the JSON Schemas of pipeline files and every type"
    )
    schema.add_argument(
        "--out", type=Path, default=Path("schemas"), help="folder (default: schemas)"
    )
    schema.add_argument("--check", action="store_true", help="fail if the files there are stale")
    schema.add_argument(
        "--json",
        action="store_true",
        help='print {"folder": ..., "written": [...]}, or with --check {"folder": ..., "stale": [...]}',
    )

    types = commands.add("types", _types, "list the registered types and their parameters")
    types.add_argument(
        "kind",
        nargs="?",
        metavar="KIND",
        help="only the types of this kind (parser, chunker, embedding, vector_store, ...)",
    )
    types.add_argument("--json", action="store_true", help="print them as JSON, by kind")


def _validate(args: argparse.Namespace) -> int:
    from ..pipeline._advice import advice
    from ..pipeline._validate import check_file, display_path, source_issues

    issues: list[ConfigIssue] = []
    warnings: list[ConfigIssue] = []  # a valid file that will index less than it seems to
    checks: dict[Path, list[EnvironmentCheck]] = {}  # --check-env's, of each valid file
    for file in args.files:
        loaded, found = check_file(file)
        found = found if loaded is None else source_issues(loaded)
        issues += found
        warnings += [] if loaded is None else advice(loaded)
        if args.check_env and loaded is not None and not found:
            from ..pipeline._check_env import check_environment  # opens stores and models

            checks[file] = asyncio.run(check_environment(loaded))
    if args.json:
        files = [
            {
                "file": display_path(file),
                "valid": not any(i.file == display_path(file) for i in issues),
            }
            | ({"checks": [c.as_dict() for c in checks[file]]} if file in checks else {})
            for file in args.files
        ]
        print_json(
            {
                "files": files,
                "issues": [issue.as_dict() for issue in issues],
                "warnings": [warning.as_dict() for warning in warnings],
            }
        )
    else:
        for issue in issues:
            print(issue, file=sys.stderr)
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if not issues:
            print(f"{len(args.files)} file(s) valid")
        for file, found_checks in checks.items():
            if len(args.files) > 1:
                print(f"{display_path(file)}:")
            for check in found_checks:
                print(check)
    # An invalid file exits 2 here as from every other command: one file, one code.
    if issues:
        return EXIT_USAGE
    failed = any(check.ok is False for found_checks in checks.values() for check in found_checks)
    return EXIT_FINDINGS if failed else EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    from ..pipeline import default_registry
    from ..pipeline._schema import stale_schemas, write_schemas

    registry = default_registry()
    if args.check:
        problems = [str(args.out / problem) for problem in stale_schemas(registry, args.out)]
        if args.json:
            print_json({"folder": str(args.out), "stale": problems})
        elif problems:
            for problem in problems:
                print(problem, file=sys.stderr)
            print("schemas are stale: run `ragflow-config schema`", file=sys.stderr)
        else:
            print(f"schemas in {args.out} are up to date")
        return EXIT_FINDINGS if problems else EXIT_OK
    written = write_schemas(registry, args.out)
    if args.json:
        print_json({"folder": str(args.out), "written": [str(args.out / path) for path in written]})
    else:
        print(f"wrote {len(written)} schema files to {args.out}")
    return EXIT_OK


def _types(args: argparse.Namespace) -> int:
    from ..pipeline import default_registry
    from ..pipeline._registry import KINDS

    registry = default_registry()
    kinds = KINDS if args.kind is None else (_kind(args.kind, KINDS),)
    if args.json:
        print_json(
            {
                kind: {
                    t.name: {
                        "class": f"{t.cls.__module__}.{t.cls.__qualname__}",
                        "distribution": t.distribution,
                        "parameters": t.parameters_model.model_json_schema(),
                    }
                    for t in registry.types(kind)
                }
                for kind in kinds
            }
        )
        return EXIT_OK
    for kind in kinds:
        print(f"{kind}:")
        for t in registry.types(kind):
            print(f"  {t.name:<18} {t.description}")
            for name, field in t.parameters_model.model_fields.items():
                default = (
                    ""
                    if field.is_required()
                    else f" = {field.get_default(call_default_factory=True)!r}"
                )
                print(f"      {name}{default}  {field.description or ''}".rstrip())
    return EXIT_OK


def _kind(wanted: str, kinds: tuple[Kind, ...]) -> Kind:
    """The kind ``types KIND`` names; ``parsers`` and ``vector-store`` are taken too."""
    for kind in kinds:
        if wanted.lower().replace("-", "_") in (kind, f"{kind}s"):
            return kind
    raise UsageError(f"unknown kind {wanted!r}; the kinds are: {', '.join(kinds)}")
