"""The ``ragflow-config`` command: a thin layer over the Python API."""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from ._errors import ConfigError, ConfigIssue, RagflowError
from .pipeline import Change, Pipeline, RunOptions, RunReport, default_registry
from .pipeline._registry import KINDS
from .pipeline._schema import stale_schemas, write_schemas
from .pipeline._spec import EvaluationSpec
from .pipeline._validate import check_file

EXIT_OK, EXIT_ERROR, EXIT_PENDING = 0, 1, 2


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.handler(args))
    except ConfigError as exc:
        _print_issues(exc.issues, getattr(args, "json", False))
        return EXIT_ERROR
    except (RagflowError, KeyError, FileNotFoundError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) and exc.args else str(exc)
        print(f"error: {message}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        return 130


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ragflow-config",
        description="Knowledge bases for LLM agents, defined in YAML pipeline files.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(
        name: str, handler: Callable[[argparse.Namespace], int], help: str
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=help, description=help)
        sub.set_defaults(handler=handler)
        return sub

    validate = command("validate", _validate, "check pipeline files and report every error")
    validate.add_argument("files", nargs="+", type=Path, metavar="FILE")
    validate.add_argument("--json", action="store_true", help="print the errors as JSON")

    schema = command("schema", _schema, "write the JSON Schemas of pipeline files and every type")
    schema.add_argument(
        "--out", type=Path, default=Path("schemas"), help="folder (default: schemas)"
    )
    schema.add_argument("--check", action="store_true", help="fail if the files there are stale")

    for name, handler, help in (
        ("run", _run, "index the sources of a pipeline (only what changed)"),
        (
            "plan",
            _plan,
            "show what a run would do, without writing; exit 2 when changes are pending",
        ),
    ):
        sub = command(name, handler, help)
        sub.add_argument("file", type=Path, metavar="FILE")
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
                type=int,
                default=None,
                help="parser processes (default: up to 4; 0 parses in-process)",
            )

    verify = command(
        "verify",
        _verify,
        "reconcile the sources with what the store holds; exit 1 on drift (--fix re-indexes it)",
    )
    verify.add_argument("file", type=Path, metavar="FILE")
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

    search = command("search", _search, "search a knowledge base")
    search.add_argument("file", type=Path, metavar="FILE")
    search.add_argument("kb", metavar="KB")
    search.add_argument("query", nargs="+", metavar="QUERY")
    search.add_argument("--top-k", type=int, default=5)
    search.add_argument("--score-threshold", type=float, default=None)
    search.add_argument("--json", action="store_true")

    listing = command("list", _list, "list the documents of a knowledge base")
    listing.add_argument("file", type=Path, metavar="FILE")
    listing.add_argument("kb", metavar="KB")
    listing.add_argument("--json", action="store_true")

    delete = command("delete", _delete, "delete one document from a knowledge base")
    delete.add_argument("file", type=Path, metavar="FILE")
    delete.add_argument("kb", metavar="KB")
    delete.add_argument("document_id", metavar="DOCUMENT_ID")

    evaluate = command(
        "eval",
        _eval,
        "measure retrieval quality on each knowledge base's judged queries; "
        "with two files, compare them side by side",
    )
    evaluate.add_argument("files", nargs="+", type=Path, metavar="FILE")
    evaluate.add_argument("--kb", action="append", metavar="NAME", help="only this knowledge base")
    evaluate.add_argument("--json", action="store_true", help="print the results as JSON")

    types = command("types", _types, "list the registered types and their parameters")
    types.add_argument("--json", action="store_true")
    return parser


def _print_issues(issues: list[ConfigIssue], as_json: bool) -> None:
    if as_json:
        print(json.dumps([issue.as_dict() for issue in issues], indent=2))
    else:
        for issue in issues:
            print(issue, file=sys.stderr)


def _validate(args: argparse.Namespace) -> int:
    issues: list[ConfigIssue] = []
    for file in args.files:
        issues += check_file(file)[1]
    _print_issues(issues, args.json)
    if not issues and not args.json:
        print(f"{len(args.files)} file(s) valid")
    return EXIT_ERROR if issues else EXIT_OK


def _schema(args: argparse.Namespace) -> int:
    registry = default_registry()
    if args.check:
        problems = stale_schemas(registry, args.out)
        for problem in problems:
            print(f"{args.out / problem}", file=sys.stderr)
        if problems:
            print("schemas are stale: run `ragflow-config schema`", file=sys.stderr)
            return EXIT_ERROR
        print(f"schemas in {args.out} are up to date")
        return EXIT_OK
    written = write_schemas(registry, args.out)
    print(f"wrote {len(written)} schema files to {args.out}")
    return EXIT_OK


class _Progress:
    """A progress line on a terminal, one log line per change otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.done = 0

    def __call__(self, kb: str, change: Change) -> None:
        self.done += 1
        if self.tty:
            self.stream.write(
                f"\r\x1b[K{kb}: {self.done} files, last: {change.action} {change.path}"
            )
            self.stream.flush()
        elif change.action != "unchanged":
            detail = f" ({change.reason})" if change.reason else ""
            self.stream.write(f"{kb}: {change.action} {change.path}{detail}\n")

    def close(self) -> None:
        if self.tty and self.done:
            self.stream.write("\n")


def _options(args: argparse.Namespace, dry_run: bool, progress: _Progress | None) -> RunOptions:
    return RunOptions(
        dry_run=dry_run,
        prune=args.prune,
        force=args.force,
        on_fingerprint_change="refuse" if args.refuse_on_fingerprint_change else "reindex",
        workers=getattr(args, "workers", None),
        progress=progress,
    )


def _print_report(report: RunReport, as_json: bool) -> None:
    if as_json:
        print(json.dumps(report.as_dict(), indent=2))
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
            if change.action in ("failed", "unreadable"):
                print(f"{kb.name}: FAILED {change.path}: {change.reason}", file=sys.stderr)
        print(
            f"{kb.name}: {verb} add {kb.count('add')}, update {kb.count('update') + kb.count('repair')}, "
            f"delete {kb.count('delete')}; unchanged {kb.count('unchanged')}, "
            f"kept {kb.count('keep')}, unsupported {kb.count('unsupported')}, "
            f"empty {kb.count('empty')}, failed {kb.count('failed') + kb.count('unreadable')}; "
            f"{kb.chunks} chunks written"
        )
        if kb.aborted:
            print(
                f"{kb.name}: stopped at the first failure (on_error: fail): {kb.aborted}",
                file=sys.stderr,
            )
    print(
        f"{len([c for kb in report.knowledge_bases for c in kb.changes])} files in {report.seconds:.1f}s"
    )


def _run(args: argparse.Namespace) -> int:
    pipeline = Pipeline.load(args.file)
    progress = None if args.json else _Progress(sys.stderr)
    try:
        report = asyncio.run(pipeline.run(args.kb, _options(args, False, progress)))
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
    options = RunOptions(dry_run=not args.fix, prune=True, force=args.force or not args.fix)
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
        print(json.dumps({"healthy": not drifted, "drift": rows}, indent=2))
    else:
        for kb, status, change in drifted:
            print(f"{kb}: {status:<10} {change.path}  ({change.reason})")
        for kb_report in report.knowledge_bases:
            ok = kb_report.count("unchanged")
            bad = sum(1 for kb, _, _ in drifted if kb == kb_report.name)
            print(f"{kb_report.name}: {ok} documents in sync, {bad} drifted")
    return EXIT_ERROR if drifted else EXIT_OK


def _search(args: argparse.Namespace) -> int:
    pipeline = Pipeline.load(args.file)

    async def search() -> int:
        async with pipeline.build([args.kb]) as built:
            hits = await built.knowledge_base(args.kb).search(
                [" ".join(args.query)], top_k=args.top_k, score_threshold=args.score_threshold
            )
        if args.json:
            print(
                json.dumps(
                    [hit.model_dump(mode="json") for hit in hits], indent=2, ensure_ascii=False
                )
            )
            return EXIT_OK
        if not hits:
            print("no results")
        for rank, hit in enumerate(hits, 1):
            content = hit.chunk.content
            text = content.text if content.type == "text" else f"<{content.media_type} data>"
            print(
                f"[{rank}] score {hit.score:.4f}  {hit.chunk.source}  (chunk {hit.chunk.chunk_index})"
            )
            print("    " + text.strip().replace("\n", "\n    "))
            print()
        return EXIT_OK

    return asyncio.run(search())


def _list(args: argparse.Namespace) -> int:
    pipeline = Pipeline.load(args.file)

    async def listing() -> int:
        async with pipeline.build([args.kb]) as built:
            documents = await built.knowledge_base(args.kb).list_documents()
        documents.sort(key=lambda d: d.source)
        if args.json:
            print(
                json.dumps(
                    [d.model_dump(mode="json") for d in documents], indent=2, ensure_ascii=False
                )
            )
        else:
            for document in documents:
                print(
                    f"{document.document_id}  {document.chunk_count:>5} chunks  {document.source}"
                )
            print(f"{len(documents)} documents")
        return EXIT_OK

    return asyncio.run(listing())


def _delete(args: argparse.Namespace) -> int:
    pipeline = Pipeline.load(args.file)

    async def delete() -> int:
        async with pipeline.build([args.kb]) as built:
            kb = built.knowledge_base(args.kb)
            # Deleting is scoped, so an id outside the scope deletes nothing: say so.
            if not await kb.list_chunks(args.document_id, limit=1):
                print(
                    f"error: nothing deleted: {args.kb} has no document {args.document_id}"
                    + (" within its metadata_filter" if kb.metadata_filter else ""),
                    file=sys.stderr,
                )
                return EXIT_ERROR
            await kb.delete_document(args.document_id)
        print(f"deleted {args.document_id} from {args.kb}")
        return EXIT_OK

    return asyncio.run(delete())


def _eval(args: argparse.Namespace) -> int:
    from .evaluation import (
        check_thresholds,
        evaluate,
        format_comparison,
        format_table,
        load_queries,
    )

    if len(args.files) > 2:
        print("error: eval takes one pipeline file, or two to compare", file=sys.stderr)
        return EXIT_ERROR
    pipelines = [Pipeline.load(file) for file in args.files]
    first = pipelines[0]
    names = [
        kb.name
        for kb in first.spec.knowledge_bases
        if kb.evaluation is not None and (not args.kb or kb.name in args.kb)
    ]
    if not names:
        print(
            f"error: {args.files[0]}: no knowledge base with an `evaluation` block", file=sys.stderr
        )
        return EXIT_ERROR

    async def measure(pipeline: Pipeline, name: str, spec: EvaluationSpec) -> Any:
        queries = load_queries(
            first.path.parent / spec.queries,
            first.path.parent / spec.topics if spec.topics else None,
        )
        async with pipeline.build([name]) as built:
            knowledge_base = built.knowledge_base(name)
            if not await knowledge_base.list_documents():
                raise RagflowError(
                    f"{pipeline.path.name}: knowledge base {name!r} holds no documents; "
                    f"index it first: ragflow-config run {pipeline.path}"
                )
            return await evaluate(knowledge_base, queries, spec.k)

    failures: list[str] = []
    output: dict[str, Any] = {}
    for name in names:
        spec = next(kb.evaluation for kb in first.spec.knowledge_bases if kb.name == name)
        assert spec is not None
        results = [asyncio.run(measure(p, name, spec)) for p in pipelines]
        labels = [str(file) for file in args.files]
        for label, result, pipeline in zip(labels, results, pipelines, strict=True):
            own = next(kb.evaluation for kb in pipeline.spec.knowledge_bases if kb.name == name)
            thresholds = (own or spec).thresholds
            failures += [
                f"{label}: {name}: {miss}" for miss in check_thresholds(result, thresholds)
            ]
        output[name] = {
            label: result.as_dict() for label, result in zip(labels, results, strict=True)
        }
        if not args.json:
            if len(results) == 1:
                print(format_table(results[0], f"{name} ({labels[0]})"))
            else:
                print(format_comparison(results[0], results[1], labels[0], labels[1]))
            print()
    if args.json:
        print(json.dumps({"results": output, "failures": failures}, indent=2))
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return EXIT_ERROR if failures else EXIT_OK


def _types(args: argparse.Namespace) -> int:
    registry = default_registry()
    if args.json:
        data = {
            kind: {
                t.name: {
                    "class": f"{t.cls.__module__}.{t.cls.__qualname__}",
                    "distribution": t.distribution,
                    "parameters": t.parameters_model.model_json_schema(),
                }
                for t in registry.types(kind)
            }
            for kind in KINDS
        }
        print(json.dumps(data, indent=2))
        return EXIT_OK
    for kind in KINDS:
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


if __name__ == "__main__":
    sys.exit(main())
