"""Commands that bring a store in line with the sources, or say how far it is: run, plan, verify."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ..pipeline import Pipeline, Rebuild, RunOptions, RunReport
from ._arguments import int_between
from ._output import EXIT_ERROR, EXIT_OK, EXIT_PENDING, Interrupted, plural, print_json
from ._parser import Commands
from ._progress import Progress

# More parser processes than this is a typo, not a machine: each is a Python process.
MAX_WORKERS = 256


def register(commands: Commands) -> None:
    for name, handler, help in (
        ("run", _run, "index the sources of a pipeline (only what changed)"),
        (
            "plan",
            _plan,
            "show what a run would do, without writing; exit 2 when changes are pending",
        ),
    ):
        sub = commands.add(name, handler, help)
        sub.add_argument("file", type=Path, metavar="FILE", help="the pipeline file")
        sub.add_argument("--kb", action="append", metavar="NAME", help="only this knowledge base")
        sub.add_argument("--json", action="store_true", help="print the report as JSON")
        sub.add_argument(
            "--prune",
            action=argparse.BooleanOptionalAction,
            default=None,
            help="delete documents whose file is gone (default: the pipeline's `prune`)",
        )
        sub.add_argument(
            "--force",
            action="store_true",
            help="go past the mass-deletion guard (max_delete_fraction)",
        )
        sub.add_argument(
            "--refuse-on-fingerprint-change",
            action="store_true",
            help="stop instead of re-indexing when the embedding, chunker or parsers changed",
        )
        if name == "run":
            sub.add_argument(
                "--workers",
                type=int_between(0, MAX_WORKERS),
                default=None,
                help="parser processes (default: up to 4; 0 parses in-process)",
            )
            sub.add_argument(
                "--executor",
                metavar="TYPE",
                help="where files are parsed: `local` or `ray`, with that type's defaults "
                "(default: the pipeline's `execution`)",
            )
            step = sub.add_mutually_exclusive_group()
            step.add_argument(
                "--shard",
                type=_shard,
                metavar="I/N",
                help="index only shard I of N (1 <= I <= N), chosen by document id, so N CI "
                "jobs index one corpus side by side; prunes nothing",
            )
            step.add_argument(
                "--prune-only",
                action="store_true",
                help="only delete documents whose file is gone, behind the mass-deletion guard: "
                "the step after every shard has run",
            )

    verify = commands.add(
        "verify",
        _verify,
        "reconcile the sources with what the store holds; exit 1 on drift (--fix re-indexes it)",
    )
    verify.add_argument("file", type=Path, metavar="FILE", help="the pipeline file")
    verify.add_argument("--kb", action="append", metavar="NAME", help="only this knowledge base")
    verify.add_argument("--json", action="store_true", help="print the report as JSON")
    verify.add_argument(
        "--fix",
        action="store_true",
        help="re-index the drifted and missing documents and delete the extra ones",
    )
    verify.add_argument(
        "--force", action="store_true", help="with --fix: go past the mass-deletion guard"
    )


def _shard(text: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(1, 4)``: shard 2 of 4, indexed from 0 for the runner."""
    index, _, count = text.partition("/")
    try:
        i, n = int(index), int(count)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: expected I/N, like 2/4") from None
    if not 1 <= i <= n:
        raise argparse.ArgumentTypeError(f"{text!r}: I must be between 1 and N")
    return i - 1, n


def _options(args: argparse.Namespace, dry_run: bool, progress: Progress | None) -> RunOptions:
    return RunOptions(
        dry_run=dry_run,
        prune=args.prune,
        force=args.force,
        on_fingerprint_change="refuse" if args.refuse_on_fingerprint_change else "reindex",
        workers=getattr(args, "workers", None),
        executor=getattr(args, "executor", None),
        shard=getattr(args, "shard", None),
        prune_only=getattr(args, "prune_only", False),
        progress=progress,
        files_found=progress.files_found if progress else None,
    )


def _print_report(report: RunReport, as_json: bool) -> None:
    if as_json:
        print_json(report.as_dict())
        return
    verb = "would" if report.dry_run else "did"
    for kb in report.knowledge_bases:
        if report.dry_run:
            for change in kb.changes:
                if change.action != "unchanged":
                    reason = f"  ({change.reason})" if change.reason else ""
                    print(f"  {change.action:<11} {change.path}{reason}")
        if kb.fingerprint_changes:
            print(f"{kb.name}: pipeline fingerprint changed: {', '.join(kb.fingerprint_changes)}")
        for change in kb.changes:
            if change.failed:
                print(f"{kb.name}: FAILED {change.path}: {change.reason}", file=sys.stderr)
        print(
            f"{kb.name}: {verb} add {kb.count('add')}, update {kb.count('update') + kb.count('repair')}, "
            f"delete {kb.count('delete')}; unchanged {kb.count('unchanged')}, "
            f"kept {kb.count('keep')}, unsupported {kb.count('unsupported')}, "
            f"empty {kb.count('empty')}, failed {kb.failures}; "
            f"{plural(kb.chunks, 'chunk')} written"
        )
        if kb.rebuild:
            _print_rebuild(kb.name, kb.rebuild, report.dry_run)
        if kb.aborted:
            print(
                f"{kb.name}: stopped at the first failure (on_error: fail): {kb.aborted}",
                file=sys.stderr,
            )
    files = sum(len(kb.changes) for kb in report.knowledge_bases)
    print(f"{plural(files, 'file')} in {report.seconds:.1f}s")


def _print_rebuild(name: str, rebuild: Rebuild, dry_run: bool) -> None:
    if dry_run:
        print(
            f"{name}: would rebuild beside the live collection {rebuild.live} "
            f"({', '.join(rebuild.changed)} changed): "
            f"about {plural(rebuild.chunks_to_embed, 'chunk')} to embed into {rebuild.target}, "
            "then switch"
        )
    elif rebuild.switched:
        retired = f"; deleted {', '.join(rebuild.retired)}" if rebuild.retired else ""
        print(
            f"{name}: rebuilt beside {rebuild.live} and switched to {rebuild.target}; "
            f"`ragflow-config rollback` switches back{retired}"
        )
    elif rebuild.waiting:
        print(f"{name}: rebuilding into {rebuild.target}: {rebuild.waiting}")
    elif rebuild.blocked:
        print(
            f"{name}: rebuild into {rebuild.target} not switched to: {rebuild.blocked}",
            file=sys.stderr,
        )


def _run(args: argparse.Namespace) -> int:
    pipeline = Pipeline.load(args.file)
    progress = None if args.json or args.quiet else Progress(sys.stderr)
    try:
        report = asyncio.run(pipeline.run(args.kb, _options(args, False, progress)))
    except KeyboardInterrupt:
        done = f"{plural(progress.done, 'file')} done" if progress else "stopped"
        raise Interrupted(f"interrupted: {done}; run again to continue") from None
    finally:
        if progress:
            progress.close()
    _print_report(report, args.json)
    return EXIT_ERROR if report.failed else EXIT_OK


def _plan(args: argparse.Namespace) -> int:
    pipeline = Pipeline.load(args.file)
    report = asyncio.run(pipeline.run(args.kb, _options(args, True, None)))
    _print_report(report, args.json)
    return EXIT_PENDING if report.pending else EXIT_OK


# How `verify` names what a dry run finds. A file the pipeline skips
# (unsupported, empty, unparsable: "failed" in a dry run) is no drift; a file
# that cannot be read is, since whatever the store holds of it cannot be checked.
_DRIFT = {
    "add": "missing",
    "update": "drift",
    "repair": "drift",
    "delete": "extra",
    "keep": "extra",
    "unreadable": "unreadable",
}


def _verify(args: argparse.Namespace) -> int:
    pipeline = Pipeline.load(args.file)
    # Reporting drift never refuses; only --fix deletes, behind the mass-deletion guard.
    # The live collection as it is: a pipeline change shows as drift, which --fix
    # repairs by a rebuild beside it.
    options = RunOptions(
        dry_run=not args.fix, prune=True, force=args.force or not args.fix, beside=args.fix
    )
    report = asyncio.run(pipeline.run(args.kb, options))
    if args.fix:
        _print_report(report, args.json)
        return EXIT_ERROR if report.failed else EXIT_OK
    drifted = [
        (kb.name, _DRIFT[change.action], change)
        for kb in report.knowledge_bases
        for change in kb.changes
        if change.action in _DRIFT
    ]
    if args.json:
        rows = [
            {"knowledge_base": kb, "status": status, **vars(change)}
            for kb, status, change in drifted
        ]
        print_json({"healthy": not drifted, "drift": rows})
    else:
        for kb, status, change in drifted:
            print(f"{kb}: {status:<10} {change.path}  ({change.reason})")
        for kb_report in report.knowledge_bases:
            ok = kb_report.count("unchanged")
            bad = sum(1 for kb, _, _ in drifted if kb == kb_report.name)
            print(f"{kb_report.name}: {ok} documents in sync, {bad} drifted")
    return EXIT_ERROR if drifted else EXIT_OK
