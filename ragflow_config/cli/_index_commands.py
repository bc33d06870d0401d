"""Commands that bring a store in line with the sources, or say how far it is: run, plan, verify."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from .._observe import observing
from .._tracing import tracing_from_environment
from ._arguments import int_between
from ._output import (
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    Interrupted,
    plural,
    print_json,
)
from ._parser import Commands
from ._signals import Terminated, run_until_terminated

if TYPE_CHECKING:  # the handlers import them: the CLI starts without the pipeline
    from ..pipeline import Change, KnowledgeBaseReport, Pipeline, Rebuild, RunOptions, RunReport
    from ._progress import Progress

# More parser processes than this is a typo, not a machine: each is a Python process.
MAX_WORKERS = 256


def register(commands: Commands) -> None:
    for name, handler, help in (
        ("run", _run, "index the sources of a pipeline (only what changed)"),
        (
            "plan",
            _plan,
            "show what a run would do, without writing; exit 0 when it could plan, "
            "changes pending or not (--check: 1 when they are)",
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
        _strict(sub)
        sub.add_argument(
            "--retry-failed",
            action="store_true",
            help="parse again the files remembered as yielding nothing (failed, empty, "
            "skipped), which runs otherwise report as they were until the file or the "
            "pipeline changes",
        )
        if name == "plan":
            sub.add_argument(
                "--format",
                choices=["text", "markdown"],
                default="text",
                help="`markdown`: the plan as the body of a pull request comment, with the "
                "deletion guard's verdict in it rather than a refusal",
            )
            sub.add_argument(
                "--check",
                action="store_true",
                help="exit 1 when changes are pending, as `schema --check` does when "
                "schemas are stale (default: 0 whenever the plan could be made)",
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
            sub.add_argument(
                "--adopt",
                action="store_true",
                help="take over the documents of the sources' files that no run wrote "
                "(AgentScope's KnowledgeBase, the Python API), matched by content hash or "
                "path, keeping their vectors where the model gives the same; without it, "
                "a run that finds such documents stops before writing (exit 1)",
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
    _strict(verify)


def _strict(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a file failed to parse under `on_error: skip` too (it is still "
        "skipped and reported; without --strict the exit code stays 0)",
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
    from ..pipeline import RunOptions

    return RunOptions(
        dry_run=dry_run,
        prune=args.prune,
        force=args.force,
        on_fingerprint_change="refuse" if args.refuse_on_fingerprint_change else "reindex",
        workers=getattr(args, "workers", None),
        executor=getattr(args, "executor", None),
        shard=getattr(args, "shard", None),
        prune_only=getattr(args, "prune_only", False),
        adopt=getattr(args, "adopt", False),
        retry_failed=getattr(args, "retry_failed", False),
        progress=progress,
        files_found=progress.files_found if progress else None,
    )


def _skipped(change: Change, on_error: str) -> bool:
    """Whether a file was skipped: it holds only what the model cannot embed (images for
    a text-only model), or it did not parse (or the store refused its content) under
    `on_error: skip`. One that cannot be read is never skipped: whatever the store holds
    of it can be neither replaced nor checked."""
    return change.action == "skipped" or (change.action == "failed" and on_error == "skip")


def _exit_code(report: RunReport, pipeline: Pipeline, strict: bool) -> int:
    """1 when the run failed (or, for a plan, would): a file that failed and was not
    skipped, a skipped file under `--strict`, a stop at the first failure, a rebuild
    not switched to, a source that matched no file for a collection not yet made."""
    on_error = {kb.name: kb.on_error for kb in pipeline.spec.knowledge_bases}
    for kb in report.knowledge_bases:
        if kb.aborted or kb.no_files or (kb.rebuild and kb.rebuild.blocked):
            return EXIT_FINDINGS
        if any(_fails(c, on_error[kb.name], strict) for c in kb.changes):
            return EXIT_FINDINGS
    return EXIT_OK


def _fails(change: Change, on_error: str, strict: bool) -> bool:
    """Whether a file fails the run: it failed and was not skipped, or `--strict` and skipped."""
    return strict if _skipped(change, on_error) else change.failed


def _print_report(
    report: RunReport, pipeline: Pipeline, as_json: bool, *, strict: bool = False
) -> None:
    if as_json:
        print_json(report.as_dict())
        return
    on_error = {kb.name: kb.on_error for kb in pipeline.spec.knowledge_bases}
    verb = "would" if report.dry_run else "did"
    for kb in report.knowledge_bases:
        skip = on_error[kb.name]
        named = [change for change in kb.changes if _named(change, skip, strict)]
        if report.dry_run:
            for change in named:
                if change.action != "unchanged":
                    action = "skipped" if _skipped(change, skip) else change.action
                    reason = f"  ({change.reason})" if change.reason else ""
                    print(f"  {action:<11} {change.path}{reason}")
        for unmatched in kb.unmatched_sources:
            level = "FAILED" if kb.no_files else "warning"
            print(f"{kb.name}: {level}: {unmatched}", file=sys.stderr)
        if kb.no_files:
            print(f"{kb.name}: {kb.no_files}; check the path and the patterns", file=sys.stderr)
        if kb.fingerprint_changes:
            print(f"{kb.name}: pipeline fingerprint changed: {', '.join(kb.fingerprint_changes)}")
        skipped = sum(1 for change in kb.changes if _skipped(change, skip) and change.failed)
        for change in named:
            if change.action == "skipped":
                if not report.dry_run:  # a plan listed it above, with its reason
                    print(f"{kb.name}: skipped {change.path}: {change.reason}", file=sys.stderr)
            elif _skipped(change, skip):
                print(
                    f"{kb.name}: skipped {change.path}: {change.reason} (on_error: skip)",
                    file=sys.stderr,
                )
            elif change.failed:
                print(f"{kb.name}: FAILED {change.path}: {change.reason}", file=sys.stderr)
        failed = f"failed {kb.failures}" + (
            f" ({skipped} skipped, on_error: skip)" if skipped else ""
        )
        print(
            f"{kb.name}: {verb} add {kb.count('add')}, update {kb.count('update') + kb.count('repair')}, "
            f"delete {kb.count('delete')}; unchanged {kb.count('unchanged')}, "
            f"kept {kb.count('keep')}, unsupported {kb.count('unsupported')}, "
            f"empty {kb.count('empty')}, "
            + (f"skipped {kb.count('skipped')}, " if kb.count("skipped") else "")
            + f"{failed}; "
            # A plan writes nothing: what it says is what the run would write.
            + (
                f"would write {plural(kb.chunks_to_embed, 'chunk')}"
                if report.dry_run
                else f"{plural(kb.chunks, 'chunk')} written"
            )
            + (f", {kb.truncated} truncated" if kb.truncated else "")
        )
        if kb.truncated:
            print(
                f"{kb.name}: {plural(kb.truncated, 'chunk')} longer than {kb.embedding_model} "
                "reads of one text, whose ends are not embedded: use the `recursive`, `token` "
                "or `heading` chunker (sized in the model's word pieces), or a smaller chunk_size",
                file=sys.stderr,
            )
        if kb.remembered:
            print(
                f"{kb.name}: {plural(kb.remembered, 'file')} yielded nothing when last tried "
                "and did not change since: not parsed again (`ragflow-config list "
                f"{pipeline.path} {kb.name} --skipped` names them, `run --retry-failed` "
                "tries them again)"
            )
        if not report.dry_run and kb.chunks:
            print(f"{kb.name}: {_vector_sources(kb)}")
        if kb.rebuild:
            _print_rebuild(kb.name, kb.rebuild, report.dry_run)
        if kb.aborted:
            print(
                f"{kb.name}: stopped at the first failure (on_error: fail): {kb.aborted}",
                file=sys.stderr,
            )
    files = sum(len(kb.changes) for kb in report.knowledge_bases)
    print(f"{plural(files, 'file')} in {report.seconds:.1f}s")


def _named(change: Change, on_error: str, strict: bool) -> bool:
    """Whether a file gets a line of its own in a report: not one remembered as yielding
    nothing (counted instead: its line would repeat every run), unless it fails the run."""
    return not change.remembered or _fails(change, on_error, strict)


def _vector_sources(kb: KnowledgeBaseReport) -> str:
    """What the written chunks cost: "vectors: 4 embedded, 96 reused; cache 0 hits, 4 misses"."""
    vectors = kb.vectors
    line = f"vectors: {vectors.embedded} embedded, {vectors.reused} reused from the store"
    if vectors.cache_hits or vectors.cache_misses:
        line += f"; embedding cache {vectors.cache_hits} hits, {vectors.cache_misses} misses"
    return line


def _print_rebuild(name: str, rebuild: Rebuild, dry_run: bool) -> None:
    if dry_run:
        # One line on one stream, whichever way the run would go.
        then = f"but not switch to it: {rebuild.blocked}" if rebuild.blocked else "then switch"
        into = (
            f"the kept collection {rebuild.target}, which this pipeline built"
            if rebuild.kept
            else rebuild.target
        )
        print(
            f"{name}: would rebuild beside the live collection {rebuild.live} "
            f"({', '.join(rebuild.changed)} changed): "
            f"{plural(rebuild.chunks_to_embed, 'chunk')} to embed into {into}, " + then
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
    from ..pipeline import Pipeline
    from ._progress import Progress

    pipeline = Pipeline.load(args.file)
    progress = None if args.json or args.quiet else Progress(sys.stderr)
    tracing = tracing_from_environment()  # None unless the OTEL_* variables ask
    try:
        with observing(tracing) if tracing is not None else contextlib.nullcontext():
            report = run_until_terminated(pipeline.run(args.kb, _options(args, False, progress)))
    except (KeyboardInterrupt, Terminated) as stop:
        done = f"{plural(progress.done, 'file')} done" if progress else "stopped"
        how, code = (
            ("terminated", EXIT_TERMINATED)
            if isinstance(stop, Terminated)
            else ("interrupted", EXIT_INTERRUPTED)
        )
        raise Interrupted(f"{how}: {done}; run again to continue", code) from None
    finally:
        if progress:
            progress.close()
        if tracing is not None:
            tracing.shutdown()  # sends the spans not sent yet
    _print_report(report, pipeline, args.json, strict=args.strict)
    return _exit_code(report, pipeline, args.strict)


def _plan(args: argparse.Namespace) -> int:
    from ..pipeline import Pipeline
    from ._plan_markdown import plan_markdown

    pipeline = Pipeline.load(args.file)
    markdown = args.format == "markdown"
    options = replace(_options(args, True, None), report_refusal=markdown)
    report = asyncio.run(pipeline.run(args.kb, options))
    if markdown:
        print(plan_markdown(report, title=f"Plan: `{args.file}`"), end="")
    else:
        _print_report(report, pipeline, args.json, strict=args.strict)
    # The exit code the run would give; pending changes are a finding only when asked.
    code = _exit_code(report, pipeline, args.strict)
    if report.refused:
        return EXIT_FINDINGS  # a run would refuse, as the comment says
    return EXIT_FINDINGS if args.check and report.pending else code


# How `verify` names what a dry run finds. A file the pipeline skips
# (unsupported, empty; unparsable under `on_error: skip`, listed as "skipped") is
# no drift; a file that cannot be read is, since whatever the store holds of it
# cannot be checked.
_DRIFT = {
    "add": "missing",
    "update": "drift",
    "repair": "drift",
    "delete": "extra",
    "keep": "extra",
    "unreadable": "unreadable",
    "foreign": "foreign",  # written outside runs: `run --adopt` takes it over
}


def _verify(args: argparse.Namespace) -> int:
    from ..pipeline import Pipeline, RunOptions

    pipeline = Pipeline.load(args.file)
    # Reporting drift never refuses; only --fix deletes, behind the mass-deletion guard.
    # The live collection as it is: a pipeline change shows as drift, which --fix
    # repairs by a rebuild beside it.
    options = RunOptions(
        dry_run=not args.fix, prune=True, force=args.force or not args.fix, beside=args.fix
    )
    report = asyncio.run(pipeline.run(args.kb, options))
    if args.fix:
        _print_report(report, pipeline, args.json, strict=args.strict)
        return _exit_code(report, pipeline, args.strict)
    on_error = {kb.name: kb.on_error for kb in pipeline.spec.knowledge_bases}
    found = [
        (kb.name, status, change)
        for kb in report.knowledge_bases
        for change in kb.changes
        if (status := _verify_status(change, on_error[kb.name]))
    ]
    drifted = [row for row in found if row[1] != "skipped"]
    skipped = [row for row in found if row[1] == "skipped"]
    aborted = [kb for kb in report.knowledge_bases if kb.aborted]
    code = EXIT_FINDINGS if drifted or aborted or (skipped and args.strict) else EXIT_OK
    if args.json:
        print_json(
            {
                "healthy": code == EXIT_OK,
                "drift": [
                    {"knowledge_base": kb, "status": status, **vars(change)}
                    for kb, status, change in drifted
                ],
                "skipped": [
                    {"knowledge_base": kb, "status": status, **vars(change)}
                    for kb, status, change in skipped
                ],
            }
        )
        return code
    for kb, status, change in found:
        if not change.remembered or status != "skipped" or args.strict:
            print(f"{kb}: {status:<10} {change.path}  ({change.reason})")
    for kb_report in report.knowledge_bases:
        ok = kb_report.count("unchanged")
        bad = sum(1 for kb, _, _ in drifted if kb == kb_report.name)
        passed = [change for kb, _, change in skipped if kb == kb_report.name]
        why = " (on_error: skip)" if any(change.failed for change in passed) else ""
        remembered = sum(1 for change in passed if change.remembered)
        print(
            f"{kb_report.name}: {ok} documents in sync, {bad} drifted"
            + (f", {len(passed)} skipped{why}" if passed else "")
            + (f" ({remembered} remembered, not parsed again)" if remembered else "")
        )
        if kb_report.aborted:
            print(
                f"{kb_report.name}: stopped at the first failure (on_error: fail): "
                f"{kb_report.aborted}",
                file=sys.stderr,
            )
    return code


def _verify_status(change: Change, on_error: str) -> str | None:
    """What `verify` calls a change, or ``None`` for one it does not list."""
    if _skipped(change, on_error):
        return "skipped"
    return "failed" if change.action == "failed" else _DRIFT.get(change.action)
