"""Commands on one knowledge base's contents: search, list, delete, reset, rollback."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import RagflowError
from .._gc import collector_paused
from ._arguments import JoinedQuery, score_threshold, top_k
from ._output import EXIT_FINDINGS, EXIT_OK, UsageError, plural, print_error, print_json
from ._parser import Commands

if TYPE_CHECKING:  # the handlers import the pipeline: the CLI starts without it
    from ..pipeline import Pipeline
    from ..rag import KnowledgeBase


def register(commands: Commands) -> None:
    search = commands.add("search", _search, "search a knowledge base")
    _file_and_kb(search)
    search.add_argument(
        "query", nargs="+", action=JoinedQuery, metavar="QUERY", help="what to search for"
    )
    search.add_argument("--top-k", type=top_k, default=5, help="how many hits (default: 5)")
    search.add_argument(
        "--score-threshold", type=score_threshold, default=None, help="drop hits scoring below this"
    )
    search.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only chunks whose metadata KEY (dots nest: org.team) equals VALUE (a JSON "
        "scalar, else a string); within the knowledge base's own metadata_filter; repeatable",
    )
    search.add_argument(
        "--json",
        action="store_true",
        help='print {"knowledge_base": KB, "hits": [...]}, as the HTTP API answers',
    )
    search.add_argument(
        "--explain",
        action="store_true",
        help="say why each hit ranks where it does: each side's rank and score, the matched "
        "terms and their weights, the fusion, the reranker, the filter in force",
    )

    listing = commands.add("list", _list, "list the documents of a knowledge base")
    _file_and_kb(listing)
    listing.add_argument(
        "--json",
        action="store_true",
        help='print {"knowledge_base": KB, "total": N, "documents": [...]}',
    )
    listing.add_argument(
        "--skipped",
        action="store_true",
        help="list instead the files remembered as yielding nothing (failed, empty, skipped), "
        "with their reasons: runs do not parse them again until the file or the pipeline "
        "changes, or `run --retry-failed`",
    )

    delete = commands.add("delete", _delete, "delete one document from a knowledge base")
    _file_and_kb(delete)
    delete.add_argument("document_id", metavar="DOCUMENT_ID", help="as `list` shows it")
    delete.add_argument(
        "--json", action="store_true", help='print {"knowledge_base": KB, "deleted": ID}'
    )

    reset = commands.add(
        "reset",
        _reset,
        "delete every document of a knowledge base (within its metadata_filter), and its "
        "collection when nothing else is left in it: the way out of a collection built for "
        "another embedding model",
    )
    _file_and_kb(reset)
    reset.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    reset.add_argument(
        "--json",
        action="store_true",
        help='print {"knowledge_base": KB, "collection_dropped": true|false}',
    )

    back = commands.add(
        "rollback",
        _rollback,
        "switch a knowledge base back to the collection its last rebuild replaced; the "
        "current one is kept, so the next run switches to it again without embedding",
    )
    _file_and_kb(back)
    back.add_argument("--json", action="store_true", help="print the collections as JSON")


def _file_and_kb(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path, metavar="FILE", help="the pipeline file")
    parser.add_argument("kb", metavar="KB", help="a knowledge base of that file, by name")


def parse_filter(pairs: list[str]) -> dict[str, Any] | None:
    """``["org.team=a", "year=2024"]`` -> ``{"org": {"team": "a"}, "year": 2024}``."""
    where: dict[str, Any] = {}
    for pair in pairs:
        key, separator, raw = pair.partition("=")
        if not separator or not key:
            raise ValueError(f"--filter {pair!r}: expected KEY=VALUE")
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw
        if isinstance(value, (dict, list)) or value is None:
            value = raw
        *parents, leaf = key.split(".")
        node = where
        for depth, parent in enumerate(parents, 1):
            node = node.setdefault(parent, {})
            if not isinstance(node, dict):  # `a=1` then `a.b=2`: a is a value, not a mapping
                raise ValueError(
                    f"--filter {pair!r}: another --filter gives {'.'.join(parents[:depth])} a value"
                )
        if isinstance(node.get(leaf), dict):  # `a.b=2` then `a=1`
            raise ValueError(f"--filter {pair!r}: another --filter names keys inside {key}")
        node[leaf] = value
    return where or None


def _load(args: argparse.Namespace) -> Pipeline:
    from ..pipeline import Pipeline

    return Pipeline.load(args.file)


# One search, then the process exits: what it makes (the store client's modules, Qdrant
# local's points) lives until then, so the collector's passes would free next to nothing.
@collector_paused()
def _search(args: argparse.Namespace) -> int:
    pipeline = _load(args)
    try:
        where = parse_filter(args.filter)
    except ValueError as exc:
        raise UsageError(str(exc)) from None

    from ..rag._explain import ExplainedHit

    async def search() -> int:
        async with pipeline.build([args.kb], search_only=True) as built:
            kb = built.knowledge_base(args.kb)
            collection = await kb.live_collection()
            if not await kb.vector_store.has_collection(collection):
                # "no results" would read as a search that found nothing (and the
                # search would create the collection, empty).
                raise RagflowError(
                    f"knowledge base {args.kb!r} was never built: its store has no "
                    f"collection {collection!r}; run `ragflow-config run {args.file}` first"
                )
            hits = await kb.search(
                [args.query],
                top_k=args.top_k,
                score_threshold=args.score_threshold,
                where=where,
                explain=args.explain,
            )
        if args.json:
            print_json(
                {"knowledge_base": args.kb, "hits": [h.model_dump(mode="json") for h in hits]}
            )
            return EXIT_OK
        if not hits:
            print("no results")
        for rank, hit in enumerate(hits, 1):
            content = hit.chunk.content
            text = content.text if content.type == "text" else f"<{content.media_type} data>"
            headings = hit.chunk.metadata.get("headings")
            section = (
                f"  {' > '.join(map(str, headings))}"
                if isinstance(headings, list) and headings
                else ""
            )
            print(
                f"[{rank}] score {hit.score:.4f}  {hit.chunk.source}  (chunk {hit.chunk.chunk_index})"
                + section
            )
            if isinstance(hit, ExplainedHit):
                print(f"    why: {hit.explain.summary()}")
            print("    " + text.strip().replace("\n", "\n    "))
            print()
        return EXIT_OK

    return asyncio.run(search())


def _list(args: argparse.Namespace) -> int:
    pipeline = _load(args)
    if args.skipped:
        return asyncio.run(_list_skipped(pipeline, args))

    async def listing() -> int:
        async with pipeline.build([args.kb]) as built:
            kb = built.knowledge_base(args.kb)
            documents = await kb.list_documents()
            collections = await _collections(kb)
        documents.sort(key=lambda d: d.source)
        if args.json:
            print_json(
                {
                    "knowledge_base": args.kb,
                    "total": len(documents),
                    "documents": [d.model_dump(mode="json") for d in documents],
                }
            )
        else:
            if collections:
                print(f"collections: {collections}")
            for document in documents:
                print(
                    f"{document.document_id}  {plural(document.chunk_count, 'chunk'):>10}  "
                    f"{document.source}"
                )
            print(plural(len(documents), "document"))
        return EXIT_OK

    return asyncio.run(listing())


async def _list_skipped(pipeline: Pipeline, args: argparse.Namespace) -> int:
    async with pipeline.build([args.kb]) as built:
        pointer = await built.knowledge_base(args.kb).read_pointer()
    memory = sorted(
        (pointer.yielded_nothing if pointer is not None else {}).items(),
        key=lambda item: item[1].path,
    )
    if args.json:
        print_json(
            {
                "knowledge_base": args.kb,
                "total": len(memory),
                "skipped": [
                    {
                        "document_id": doc_id,
                        "path": entry.path,
                        "action": entry.action,
                        "reason": entry.reason,
                    }
                    for doc_id, entry in memory
                ],
            }
        )
        return EXIT_OK
    for _, entry in memory:
        print(f"{entry.action:<11} {entry.path}  ({entry.reason})")
    print(plural(len(memory), "file") + " remembered as yielding nothing")
    return EXIT_OK


def _delete(args: argparse.Namespace) -> int:
    pipeline = _load(args)

    async def delete() -> int:
        async with pipeline.build([args.kb]) as built:
            kb = built.knowledge_base(args.kb)
            # Deleting is scoped, so an id outside the scope deletes nothing: say so.
            if not await kb.list_chunks(args.document_id, limit=1):
                print_error(
                    f"nothing deleted: {args.kb} has no document {args.document_id}"
                    + (" within its metadata_filter" if kb.metadata_filter else ""),
                    as_json=args.json,
                )
                return EXIT_FINDINGS  # what the store holds, not the command line, is at odds
            await kb.delete_document(args.document_id)
        if args.json:
            print_json({"knowledge_base": args.kb, "deleted": args.document_id})
        else:
            print(f"deleted {args.document_id} from {args.kb}")
        return EXIT_OK

    return asyncio.run(delete())


def _reset(args: argparse.Namespace) -> int:
    pipeline = _load(args)
    spec = next((kb for kb in pipeline.spec.knowledge_bases if kb.name == args.kb), None)
    if spec is None:
        raise KeyError(f"{args.file}: no knowledge base named {args.kb!r}")
    scope = f" within {json.dumps(spec.metadata_filter)}" if spec.metadata_filter else ""
    what = f"every document of {args.kb} (collection {spec.collection!r}{scope})"
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError(f"reset deletes {what}; pass --yes to confirm")
        # The question goes to stderr under --json: stdout holds one JSON document.
        print(f"Delete {what}? [y/N] ", end="", flush=True, file=sys.stderr if args.json else None)
        if input().strip().lower() not in ("y", "yes"):
            if args.json:
                print_error("nothing deleted", as_json=True)
            else:
                print("nothing deleted")
            return EXIT_FINDINGS  # declined: not done, though nothing was wrong with the command

    async def reset() -> int:
        async with pipeline.build([args.kb]) as built:
            dropped = await built.knowledge_base(args.kb).clear()
        if args.json:
            print_json({"knowledge_base": args.kb, "collection_dropped": dropped})
            return EXIT_OK
        print(
            f"reset {args.kb}: "
            + ("collection dropped" if dropped else "documents deleted; other scopes' remain")
        )
        return EXIT_OK

    return asyncio.run(reset())


async def _collections(kb: KnowledgeBase) -> str:
    """Which collections hold the knowledge base, and which of them is read, in one line;
    nothing before its first rebuild, when its collection is the only one."""
    pointer = await kb.read_pointer()
    if pointer is None or (
        # Made only to remember files that yielded nothing (``_yielded_nothing``).
        [g.collection for g in pointer.generations] == [kb.collection] and pointer.building is None
    ):
        return ""
    read = kb.generation_read(pointer).collection
    names = [
        f"{g.collection} ({'live' if i == 0 else 'previous'}"
        + (", read by this pipeline" if g.collection == read and i else "")
        + ")"
        for i, g in enumerate(pointer.generations)
    ]
    if pointer.building is not None:
        building = pointer.building
        state = (
            f"not switched: {building.not_switched}" if building.not_switched else "being rebuilt"
        )
        names.append(f"{building.collection} ({state})")
    return ", ".join(names)


def _rollback(args: argparse.Namespace) -> int:
    from ..pipeline import rollback

    pipeline = _load(args)

    async def back() -> int:
        async with pipeline.build([args.kb]) as built:
            pointer = await rollback(built.knowledge_base(args.kb))
        names = [g.collection for g in pointer.generations]
        if args.json:
            print_json({"live": names[0], "previous": names[1:]})
        else:
            print(
                f"{args.kb}: {names[0]} is live again; {names[1]} is kept, and the next run "
                "of a pipeline that built it switches back to it without embedding"
            )
        return EXIT_OK

    return asyncio.run(back())
