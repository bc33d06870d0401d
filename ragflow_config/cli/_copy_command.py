"""``copy``: move a knowledge base's records from another store of the file, without the model."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ._output import EXIT_FINDINGS, EXIT_OK, plural, print_json
from ._parser import Commands


def register(commands: Commands) -> None:
    copy = commands.add(
        "copy",
        _copy,
        "copy a knowledge base's records (vectors, chunks, state) from another store of the "
        "file to the one it uses now, without calling the embedding model; run it again "
        "after an interruption to finish",
    )
    copy.add_argument("file", type=Path, metavar="FILE", help="the pipeline file")
    copy.add_argument("kb", metavar="KB", help="a knowledge base of that file, by name")
    copy.add_argument(
        "--from",
        dest="source_store",
        required=True,
        metavar="STORE",
        help="the entry of `vector_stores` to copy from (not the knowledge base's own)",
    )
    copy.add_argument("--json", action="store_true", help="print the summary as JSON")


def _copy(args: argparse.Namespace) -> int:
    from ..pipeline import Pipeline, copy_knowledge_base

    pipeline = Pipeline.load(args.file)
    report = asyncio.run(copy_knowledge_base(pipeline, args.kb, args.source_store))
    # A document left out is one the target lacks: the copy is not whole.
    status = EXIT_FINDINGS if report.left_out else EXIT_OK
    if args.json:
        print_json(report.as_dict())
        return status
    for item in report.left_out:
        print(
            f"{report.knowledge_base}: left out {item.path or item.document_id}: {item.reason}",
            file=sys.stderr,
        )
    print(
        f"{report.knowledge_base}: copied from {report.source_store}: "
        f"{plural(report.copied, 'document')} copied ({report.replaced} replacing an "
        f"incomplete or other version), {report.skipped} skipped (already there), "
        f"{plural(report.chunks, 'chunk')} written"
        + (f"; {len(report.left_out)} left out" if report.left_out else "")
    )
    return status
