"""``init``: write a commented pipeline file for a folder of documents."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from ._output import UsageError, print_json
from ._parser import Commands

# Where the file goes by default: the current folder, as `git init` and `dbt init` write
# there; the folder to index is named relative to it.
DEFAULT_OUTPUT = Path("ragflow.yaml")
# The names `pipeline._init` knows (STORES, MODELS), spelt here so that building the
# parser imports no pipeline code; tests/init checks that they agree.
STORE_CHOICES = ("qdrant-edge", "qdrant", "milvus-lite", "pgvector")
MODEL_CHOICES = ("minilm", "openai", "ollama", "hashing")


def register(commands: Commands) -> None:
    init = commands.add(
        "init",
        _init,
        "write a commented pipeline file for a folder, a bucket or a website, from the types "
        "of its files",
    )
    init.add_argument(
        "folder",
        nargs="?",
        default=".",
        metavar="FOLDER|URL",
        help="the folder of documents to index (default: the current folder), or a remote "
        "source: s3://bucket/prefix, https://site/ (crawled) or https://site/sitemap.xml; a "
        "remote source's types come from a sample of its listing",
    )
    init.add_argument(
        "--endpoint-url",
        metavar="URL",
        help="an s3:// source's S3-compatible endpoint (R2, MinIO, GCS); AWS's when unset",
    )
    init.add_argument(
        "--store",
        choices=STORE_CHOICES,
        default="qdrant-edge",
        help="where the vectors go: Qdrant Edge on local disk (default), Qdrant's local "
        "folder (small collections), a Milvus Lite file, or PostgreSQL + pgvector (its DSN "
        "from PGVECTOR_DSN)",
    )
    init.add_argument(
        "--model",
        choices=MODEL_CHOICES,
        default="minilm",
        help="the embedding model: MiniLM offline (default), OpenAI (key from "
        "OPENAI_API_KEY), Ollama (server from OLLAMA_HOST), or hashing (lexical, no model)",
    )
    init.add_argument(
        "--output",
        "-o",
        type=Path,
        default=DEFAULT_OUTPUT,
        metavar="FILE",
        help=f"the pipeline file to write; never overwritten without --force "
        f"(default: {DEFAULT_OUTPUT})",
    )
    init.add_argument(
        "--force",
        action="store_true",
        help="replace the pipeline file if it exists (default: never overwrite it)",
    )
    init.add_argument(
        "--json",
        action="store_true",
        help='print {"file", "knowledge_base", "source", "files", "parsers", "left_out", '
        '"extras", "next": [...]}',
    )


def _init(args: argparse.Namespace) -> int:
    from .._extras import install_line
    from ..pipeline._init import InitRefused, write_pipeline, write_remote_pipeline

    try:
        if "://" in args.folder:
            endpoint = {"endpoint_url": args.endpoint_url} if args.endpoint_url else {}
            written = write_remote_pipeline(
                args.folder,
                args.output,
                args.store,
                args.model,
                overwrite=args.force,
                parameters=endpoint,
            )
        else:
            written = write_pipeline(
                Path(args.folder), args.output, args.store, args.model, overwrite=args.force
            )
    except InitRefused as exc:
        raise UsageError(str(exc)) from None
    found, draft, target = written.survey, written.draft, written.target
    parsers = ", ".join(parser.type for parser in draft.parsers)
    next_steps = [
        install_line(draft.extras),
        f"ragflow-config validate {target.file}",
        f"ragflow-config run {target.file}",
        f'ragflow-config search {target.file} {target.name} "your question"',
    ]
    if args.json:
        print_json(
            {
                "file": str(written.file),
                "knowledge_base": target.name,
                "source": str(target.source),
                "files": found.files,
                "parsers": [parser.type for parser in draft.parsers],
                "left_out": {str(t or "unknown"): found.counts[t] for t in draft.unread},
                "extras": sorted(draft.extras),
                "next": next_steps,
            }
        )
        return 0
    sampled = "" if target.whole else " (a sample of its listing)"
    print(
        f"wrote {written.file}: {found.files} files in {target.source}/{sampled}, read by {parsers}"
    )
    for media_type in draft.unread:
        print(
            f"  left out: {found.counts[media_type]} file(s) of {media_type or 'unknown type'}, "
            f"e.g. {found.examples[media_type]}"
        )
    if not found.pdfs_checked:
        print(f"  PDFs not checked for scanned pages: {install_line({'rag'})}, then {_again(args)}")
    print("next:")
    for step in next_steps:
        print(f"  {step}")
    return 0


def _again(args: argparse.Namespace) -> str:
    """This very `init`, every choice spelt out, to run again over the file it wrote."""
    return shlex.join(
        [
            *("ragflow-config", "init", str(args.folder)),
            *("--store", args.store, "--model", args.model, "--output", str(args.output)),
            "--force",
        ]
    )
