"""`eval FILE --against REF`: the quality change of a branch, as a table or a pull-request comment."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from ._html_file import write_html
from ._output import EXIT_FINDINGS, EXIT_OK, EXIT_USAGE, print_error, print_json

HEAD_LABEL = "working tree"


def eval_against(args: argparse.Namespace) -> int:
    """Both versions' results side by side (text, Markdown or JSON); exit 1 on a missed threshold.

    Only the working tree's thresholds count: a branch is not failed for what its base misses.
    """
    from ..evaluation import (
        AgainstError,
        check_thresholds,
        compare,
        describe_test,
        evaluate_against,
        format_comparison,
        format_comparison_markdown,
        format_table,
        metric_label,
    )
    from ..evaluation._html import EXPLAINED_HITS, Run, Section, html_report
    from ..pipeline import Pipeline

    markdown = args.format == "markdown"
    refusal = None
    if args.against is None:
        refusal = "--format markdown shows a comparison: give --against REF"
    elif len(args.files) != 1:
        refusal = "eval --against takes one pipeline file"
    elif markdown and args.json:
        refusal = "give --json or --format markdown, not both"
    if refusal is not None:
        print_error(refusal, args.json)
        return EXIT_USAGE
    file = args.files[0]
    try:
        explain = EXPLAINED_HITS if args.html else 0
        report = asyncio.run(evaluate_against(file, args.against, args.kb, explain=explain))
    except AgainstError as exc:
        print_error(str(exc), args.json)
        return EXIT_USAGE
    version = report.version
    base_label = f"{version.ref} ({version.commit[:12]})"
    thresholds = {
        kb.name: kb.evaluation.thresholds
        for kb in Pipeline.load(file).spec.knowledge_bases
        if kb.evaluation is not None
    }

    failures: list[str] = []
    sections: list[Section] = []
    results: dict[str, Any] = {}
    comparisons: dict[str, Any] = {}
    blocks: list[str] = []
    if markdown:
        blocks.append(
            f"### Retrieval quality: `{version.path}` against `{version.ref}` "
            f"(`{version.commit[:12]}`)"
        )
    for name, head in report.head.items():
        failures += [
            f"{HEAD_LABEL}: {name}: {miss}" for miss in check_thresholds(head, thresholds[name])
        ]
        base = report.base.get(name)
        runs = [Run(base_label, base)] if base else []
        sections.append(Section(name, [*runs, Run(HEAD_LABEL, head)], report.queries[name]))
        results[name] = {"base": base.as_dict() if base else None, "working_tree": head.as_dict()}
        if base is None:
            new = f"not in {version.ref}: nothing to compare with"
            if markdown:
                values = ", ".join(
                    f"{metric_label(metric, head.k)} {value:.4f}"
                    for metric, value in head.metrics.items()
                )
                blocks.append(f"#### `{name}`\n\nNew in this branch, {new}. {values}.")
            else:
                blocks.append(format_table(head, f"{name} ({HEAD_LABEL}; {new})"))
            continue
        comparisons[name] = {
            "test": describe_test(base.query_count),
            "metrics": {
                row.metric: {
                    "difference": row.difference,
                    "p_value": row.p_value,
                    "significant": row.significant,
                }
                for row in compare(base, head)
            },
        }
        if markdown:
            blocks.append(f"#### `{name}`\n\n{format_comparison_markdown(base, head)}")
        else:
            title = f"{name}: {base_label} against the {HEAD_LABEL}"
            blocks.append(f"{title}\n{format_comparison(base, head, version.ref, HEAD_LABEL)}")
    if args.html:
        write_html(args.html, html_report(sections))
    if args.json:
        print_json(
            {
                "against": {"ref": version.ref, "commit": version.commit, "file": version.path},
                # Right (the working tree) minus left (the ref), per knowledge base.
                "results": results,
                "comparisons": comparisons,
                "collections": report.collections,
                "failures": failures,
            }
        )
    else:
        print("\n\n".join(blocks))
    for failure in failures:
        print(f"FAILED {failure}", file=sys.stderr)
    return EXIT_FINDINGS if failures else EXIT_OK
