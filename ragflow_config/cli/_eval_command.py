"""`eval`: retrieval quality on judged queries, for one pipeline or two side by side."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import RagflowError
from ._output import EXIT_FINDINGS, EXIT_OK, UsageError, print_json
from ._parser import Commands

if TYPE_CHECKING:  # the handler imports the pipeline: the CLI starts without it
    from ..evaluation import JudgedQuery
    from ..pipeline import Pipeline
    from ..pipeline._spec import EvaluationSpec


def register(commands: Commands) -> None:
    evaluate = commands.add(
        "eval",
        _eval,
        "measure retrieval quality on each knowledge base's judged queries; "
        "with two files, compare them side by side",
    )
    evaluate.add_argument(
        "files", nargs="+", type=Path, metavar="FILE", help="one pipeline file, or two to compare"
    )
    evaluate.add_argument("--kb", action="append", metavar="NAME", help="only this knowledge base")
    evaluate.add_argument("--json", action="store_true", help="print the results as JSON")
    evaluate.add_argument(
        "--against",
        metavar="REF",
        help="compare FILE as it is at git REF (origin/main, a tag, a commit) with the working "
        "tree: each version indexed into its own temporary collections, both measured on the "
        "working tree's judged queries",
    )
    evaluate.add_argument(
        "--html",
        type=Path,
        metavar="REPORT",
        help="also write REPORT, one self-contained HTML file: the metric table, a chart of "
        "each query's ndcg (its change, with two files), where the relevant sources landed, "
        "and the worst queries' top hits with their explain",
    )
    evaluate.add_argument(
        "--format",
        choices=("text", "markdown"),
        default="text",
        help="text, or markdown (with --against): the comparison as a pull-request comment, "
        "with a one-line verdict",
    )


def _eval(args: argparse.Namespace) -> int:
    if args.against is not None or args.format != "text":
        from ._eval_against import eval_against

        return eval_against(args)
    from ..evaluation import (
        check_thresholds,
        compare,
        describe_test,
        evaluate,
        format_comparison,
        format_table,
        load_queries,
    )
    from ..evaluation._html import EXPLAINED_HITS, Run, Section, html_report
    from ..pipeline import Pipeline

    if len(args.files) > 2:
        raise UsageError("eval takes one pipeline file, or two to compare")
    pipelines = [Pipeline.load(file) for file in args.files]
    first = pipelines[0]
    names = [
        kb.name
        for kb in first.spec.knowledge_bases
        if kb.evaluation is not None and (not args.kb or kb.name in args.kb)
    ]
    if not names:
        raise UsageError(f"{args.files[0]}: no knowledge base with an `evaluation` block")

    async def measure(
        pipeline: Pipeline, name: str, spec: EvaluationSpec, queries: list[JudgedQuery]
    ) -> Any:
        async with pipeline.build([name]) as built:
            knowledge_base = built.knowledge_base(name)
            if not await knowledge_base.list_documents():
                raise RagflowError(
                    f"{pipeline.path.name}: knowledge base {name!r} holds no documents; "
                    f"index it first: ragflow-config run {pipeline.path}"
                )
            return await evaluate(
                knowledge_base, queries, spec.k, explain=EXPLAINED_HITS if args.html else 0
            )

    failures: list[str] = []
    sections: list[Section] = []
    output: dict[str, Any] = {}
    comparisons: dict[str, Any] = {}
    for name in names:
        spec = next(kb.evaluation for kb in first.spec.knowledge_bases if kb.name == name)
        assert spec is not None
        queries = load_queries(
            first.path.parent / spec.queries,
            first.path.parent / spec.topics if spec.topics else None,
        )
        results = [asyncio.run(measure(p, name, spec, queries)) for p in pipelines]
        labels = [str(file) for file in args.files]
        sections.append(
            Section(name, [Run(*run) for run in zip(labels, results, strict=True)], queries)
        )
        for label, result, pipeline in zip(labels, results, pipelines, strict=True):
            own = next(kb.evaluation for kb in pipeline.spec.knowledge_bases if kb.name == name)
            thresholds = (own or spec).thresholds
            failures += [
                f"{label}: {name}: {miss}" for miss in check_thresholds(result, thresholds)
            ]
        output[name] = {
            label: result.as_dict() for label, result in zip(labels, results, strict=True)
        }
        if len(results) == 2:
            comparisons[name] = {
                "test": describe_test(results[0].query_count),
                "metrics": {
                    row.metric: {
                        "difference": row.difference,
                        "p_value": row.p_value,
                        "significant": row.significant,
                    }
                    for row in compare(results[0], results[1])
                },
            }
        if not args.json:
            if len(results) == 1:
                print(format_table(results[0], f"{name} ({labels[0]})"))
            else:
                print(format_comparison(results[0], results[1], labels[0], labels[1]))
            print()
    if args.html:
        from ._html_file import write_html

        write_html(args.html, html_report(sections))
    if args.json:
        document: dict[str, Any] = {"results": output, "failures": failures}
        if comparisons:
            # Right minus left, per knowledge base; p from a paired randomisation test.
            document["comparisons"] = comparisons
        print_json(document)
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return EXIT_FINDINGS if failures else EXIT_OK
