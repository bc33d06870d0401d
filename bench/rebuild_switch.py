"""Issue 33: what a rebuild beside the live collection costs at its switch, and on disk.

    python bench/rebuild_switch.py                                # 2,000 and 20,000 chunks, pgvector and Milvus Lite
    python bench/rebuild_switch.py --chunks 2000 --backends milvus --repeats 3 --cycles 0  # a smoke run

For each store and size, one knowledge base goes through four generations, each
a ``Pipeline.run`` in this process (hashing model, approx_token 256/32, on
``make_corpus.py``'s text files, no office files): generation 0 is built in
place; 1 and 2 rebuild beside the live collection with ``keep_previous: 1``; 3
with ``keep_previous: 0``. Only the model's dimensions change between
generations (384, 385, 386, 387, ...), so every collection holds the same chunks:
each generation's bytes are comparable.

Two things are measured:

1. The switch. ``switch`` (read the pointer, write it) and ``retire`` (drop the
   collections past ``keep_previous``, then write the pointer without them)
   are timed apart, wall and CPU seconds (``time.process_time()`` of this
   process; the store's server, the PostgreSQL backends or Milvus Lite's
   process, separately). Between generations 2 and 3, ``--repeats`` switches
   back and forth between the two kept collections (nothing to retire: the
   switch alone); ``--cycles`` extra rebuilds with ``keep_previous: 0`` after
   generation 3 give more ``retire`` samples, one collection each.
2. The bytes on disk: the store's own files for Milvus Lite (its ``.db`` file
   and any sibling it writes); for pgvector ``pg_total_relation_size`` of the
   knowledge base's tables (its collections and the pointer registry) and,
   beside it, the size of the data directory (WAL included). Before the first
   rebuild, at its peak (just before each switch), and after each switch.

Stores live on /dev/shm when there is one (``--stores`` to choose); PostgreSQL
is a throwaway embedded server (``tests/_postgres.py``). Results print as
Markdown tables for ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import psutil
from make_corpus import make_corpus

import ragflow_config.pipeline._generations as generations
import ragflow_config.pipeline._run as run_module
from ragflow_config.pipeline import Pipeline, RunOptions
from ragflow_config.pipeline._generations import Rebuild
from ragflow_config.rag import KnowledgeBase

HERE = Path(__file__).resolve().parent
CHUNKS_PER_FILE = 9.0  # make_corpus's text files at approx_token 256/32, measured
DIMENSIONS = 384
COLLECTION = "rebuild"

PIPELINE = """\
version: 1
vector_stores:
  store:
{store_block}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: {dimensions}}}}}
knowledge_bases:
  - name: kb
    sources: [{{path: {corpus}, allow_outside: true, include: ["**/*.md", "**/*.txt"]}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 256, overlap: 32}}}}
    embedding: model
    vector_store: store
    collection: {collection}
    keep_previous: {keep}
    max_delete_fraction: 1.0
"""
STORE_BLOCKS = {
    "pgvector": "    type: pgvector",  # the server's DSN from $PGVECTOR_DSN
    "milvus": "    type: milvus_lite\n    parameters: {{uri: {store}}}",
}


@dataclass
class Timing:
    wall: float
    cpu: float
    server_cpu: float


@dataclass
class Measured:
    """One store at one size."""

    store: str
    chunks: int = 0
    bytes: list[tuple[str, int, int]] = field(default_factory=list)  # (when, store bytes, data dir)
    switches: list[Timing] = field(default_factory=list)  # the switch alone
    retires: list[Timing] = field(default_factory=list)  # one collection dropped each
    run_seconds: list[float] = field(default_factory=list)


class Server:
    """CPU seconds of the store's server: PostgreSQL's process tree, or Milvus Lite's."""

    def __init__(self, postmaster: psutil.Process | None) -> None:
        self.postmaster = postmaster

    def cpu(self) -> float:
        roots = [self.postmaster] if self.postmaster else psutil.Process().children()
        total = 0.0
        for root in roots:
            with suppress(psutil.NoSuchProcess):
                own = root.cpu_times()
                total += own.user + own.system + own.children_user + own.children_system
                for child in root.children(recursive=True):
                    with suppress(psutil.NoSuchProcess):
                        total += sum(child.cpu_times()[:2])
        return total


async def timed(work: Callable[[], Awaitable[Any]], server: Server) -> tuple[Any, Timing]:
    wall, cpu, server_cpu = time.perf_counter(), time.process_time(), server.cpu()
    result = await work()
    return result, Timing(
        time.perf_counter() - wall, time.process_time() - cpu, server.cpu() - server_cpu
    )


def folder_bytes(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            with suppress(FileNotFoundError):
                total += os.lstat(os.path.join(root, name)).st_size
    return total


class Disk:
    """The store's bytes on disk, and the data directory's when the store is a server."""

    def __init__(self, store: str, folder: Path, data: Path | None) -> None:
        self.store, self.folder, self.data = store, folder, data

    async def measure(self, kb: KnowledgeBase) -> tuple[int, int]:
        if self.store == "milvus":
            found = sum(
                folder_bytes(p) if p.is_dir() else p.stat().st_size
                for p in self.folder.iterdir()
                if p.name.startswith("milvus.db") or p.name.startswith(".milvus.db")
            )
            return found, found
        import psycopg

        async with await psycopg.AsyncConnection.connect(os.environ["PGVECTOR_DSN"]) as conn:
            cursor = await conn.execute(
                "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
                " JOIN pg_namespace n ON n.oid = c.relnamespace"
                " WHERE c.relkind = 'r' AND n.nspname = 'public'"
                " AND (c.relname LIKE %s OR c.relname = 'ragflow_pointers')",
                (f"{kb.collection}%",),
            )
            row = await cursor.fetchone()
            assert row is not None
            return int(row[0]), folder_bytes(self.data) if self.data else 0


def write_pipeline(folder: Path, store: str, corpus: Path, dimensions: int, keep: int) -> Path:
    path = folder / f"pipeline-{dimensions}.yaml"
    path.write_text(
        PIPELINE.format(
            store_block=STORE_BLOCKS[store].format(store=folder / "milvus.db"),
            dimensions=dimensions,
            corpus=corpus,
            collection=COLLECTION,
            keep=keep,
        ),
        encoding="utf-8",
    )
    return path


async def measure(
    store: str,
    chunks: int,
    folder: Path,
    corpus: Path,
    server: Server,
    data: Path | None,
    args: Any,
) -> Measured:
    result = Measured(store)
    disk = Disk(store, folder, data)
    original_retire = generations.retire
    original_switch = generations.switch
    original_delete: dict[int, Any] = {}

    async def retire(kb: KnowledgeBase, pointer: Any) -> list[str]:
        store_object = kb.vector_store
        if id(store_object) not in original_delete:
            original_delete[id(store_object)] = store_object.delete_collection

            async def delete_collection(name: str) -> None:
                _, timing = await timed(lambda: original_delete[id(store_object)](name), server)
                result.retires.append(timing)

            setattr(store_object, "delete_collection", delete_collection)  # noqa: B010
        return await original_retire(kb, pointer)

    async def switch(kb: KnowledgeBase, rebuild: Rebuild, keep_previous: int) -> None:
        peak = await disk.measure(kb)
        result.bytes.append((f"peak, building generation {generation}", *peak))
        retired: list[Timing] = []

        async def timed_retire(kb: KnowledgeBase, pointer: Any) -> list[str]:
            out, timing = await timed(lambda: retire(kb, pointer), server)
            retired.append(timing)
            return out

        generations.retire = timed_retire
        try:
            _, timing = await timed(lambda: original_switch(kb, rebuild, keep_previous), server)
        finally:
            generations.retire = original_retire
        alone = sum(t.wall for t in retired), sum(t.cpu for t in retired)
        alone_server = sum(t.server_cpu for t in retired)
        result.switches.append(
            Timing(timing.wall - alone[0], timing.cpu - alone[1], timing.server_cpu - alone_server)
        )

    run_module.switch = switch
    keeps = [1, 1, 1, 0] + [0] * args.cycles
    generation = 0
    try:
        for generation, keep in enumerate(keeps):
            path = write_pipeline(folder, store, corpus, DIMENSIONS + generation % 8, keep)
            pipeline = Pipeline.load(path)
            started = time.perf_counter()
            report = await pipeline.run(options=RunOptions(workers=0))
            result.run_seconds.append(time.perf_counter() - started)
            kb_report = report.knowledge_bases[0]
            assert not report.failed, kb_report.as_dict()
            async with pipeline.build() as built:
                kb = built.knowledge_bases["kb"]
                if generation == 0:
                    result.chunks = kb_report.chunks
                    result.bytes.append(("generation 0, built in place", *await disk.measure(kb)))
                    continue
                assert kb_report.rebuild is not None and kb_report.rebuild.switched
                after = await disk.measure(kb)
                result.bytes.append((f"after its switch, keep_previous {keep}", *after))
                if generation == 2:
                    await switch_back_and_forth(kb, args.repeats, result, server)
    finally:
        run_module.switch = original_switch
    return result


async def switch_back_and_forth(
    kb: KnowledgeBase, repeats: int, result: Measured, server: Server
) -> None:
    """The switch alone, ``repeats`` times: to the kept collection, and back."""
    store = kb.vector_store
    for _ in range(repeats):
        pointer = await kb.read_pointer()
        assert pointer is not None and len(pointer.generations) == 2
        live, kept = pointer.generations
        await store.write_pointer(kb.pointer_name, pointer.model_copy(update={"building": kept}))
        rebuild = Rebuild(live.collection, kept.collection, ["bench"], 0)
        _, timing = await timed(partial(generations.switch, kb, rebuild, 1), server)
        assert rebuild.switched and not rebuild.retired
        result.switches.append(timing)
    if repeats % 2:  # leave the latest generation live, as the run left it
        pointer = await kb.read_pointer()
        assert pointer is not None
        live, kept = pointer.generations
        await store.write_pointer(kb.pointer_name, pointer.model_copy(update={"building": kept}))
        await generations.switch(kb, Rebuild(live.collection, kept.collection, [], 0), 1)


@contextmanager
def postgres(parent: Path) -> Iterator[tuple[Server, Path]]:
    sys.path.insert(0, str(HERE.parent / "tests"))
    from _postgres import restartable_postgres_server

    with restartable_postgres_server(parent) as server:
        os.environ["PGVECTOR_DSN"] = server.dsn
        pid = int((server.data / "postmaster.pid").read_text().split()[0])
        yield Server(psutil.Process(pid)), server.data


def ms(values: list[float]) -> str:
    """Median (min-max) in milliseconds."""
    if not values:
        return "-"
    return (
        f"{statistics.median(values) * 1e3:.1f} ({min(values) * 1e3:.1f}-{max(values) * 1e3:.1f})"
    )


def mean_ms(values: list[float]) -> str:
    """The mean in milliseconds: psutil counts a server's CPU in 10 ms ticks."""
    return f"{statistics.mean(values) * 1e3:.1f}" if values else "-"


def mb(value: int) -> str:
    return f"{value / 1e6:.1f}"


def ratio(a: list[float], b: list[float]) -> str:
    if not a or not b or not statistics.median(a):
        return "-"
    return f"{statistics.median(b) / statistics.median(a):.2f}x"


def print_tables(results: list[Measured]) -> None:
    print("\n### The switch and the deletion\n")
    print(
        "| store | chunks | switch: wall ms | switch: CPU ms | switch: server CPU ms, mean "
        "| retire, per collection: wall ms | CPU ms | server CPU ms, mean | runs, s |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for r in results:
        print(
            f"| {r.store} | {r.chunks} | {ms([t.wall for t in r.switches])} "
            f"| {ms([t.cpu for t in r.switches])} | {mean_ms([t.server_cpu for t in r.switches])} "
            f"| {ms([t.wall for t in r.retires])} | {ms([t.cpu for t in r.retires])} "
            f"| {mean_ms([t.server_cpu for t in r.retires])} "
            f"| {', '.join(f'{s:.0f}' for s in r.run_seconds)} |"
        )
    print(
        f"\nsamples: {', '.join(f'{r.store} {r.chunks}: {len(r.switches)} switches, {len(r.retires)} drops' for r in results)}"
    )
    stores = sorted({r.store for r in results})
    print(
        "\n| store | ratio, largest / smallest size | switch wall | switch CPU | retire wall | retire CPU |"
    )
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for store in stores:
        sized = sorted((r for r in results if r.store == store), key=lambda r: r.chunks)
        if len(sized) < 2:
            continue
        a, b = sized[0], sized[-1]
        print(
            f"| {store} | {b.chunks} / {a.chunks} chunks "
            f"| {ratio([t.wall for t in a.switches], [t.wall for t in b.switches])} "
            f"| {ratio([t.cpu for t in a.switches], [t.cpu for t in b.switches])} "
            f"| {ratio([t.wall for t in a.retires], [t.wall for t in b.retires])} "
            f"| {ratio([t.cpu for t in a.retires], [t.cpu for t in b.retires])} |"
        )
    print("\n### Bytes on disk through the rebuilds\n")
    print("| store | chunks | moment | store MB | x generation 0 | data dir MB |")
    print("| --- | ---: | --- | ---: | ---: | ---: |")
    for r in results:
        base = r.bytes[0][1] or 1
        for when, found, data in r.bytes[: 1 + 2 * 3]:  # generations 0-3
            print(
                f"| {r.store} | {r.chunks} | {when} | {mb(found)} | {found / base:.2f}x "
                f"| {mb(data) if r.store == 'pgvector' else '-'} |"
            )


async def main_async(args: argparse.Namespace) -> None:
    root = Path(tempfile.mkdtemp(prefix="ragflow-rebuild-", dir=args.stores))
    root.chmod(0o755)  # PostgreSQL runs as a user of its own when we are root
    results = []
    try:
        with ExitStack() as stack:
            pg = stack.enter_context(postgres(root)) if "pgvector" in args.backends else None
            for chunks in args.chunks:
                files = max(1, round(chunks / CHUNKS_PER_FILE))
                corpus = args.corpora / f"rebuild-{files}"
                make_corpus(corpus, files, office_share=0.0)
                for store in args.backends:
                    folder = root / f"{store}-{chunks}"
                    folder.mkdir()
                    server, data = (
                        pg if pg is not None and store == "pgvector" else (Server(None), None)
                    )
                    print(f"{store}, {chunks} chunks ({files} files) ...", file=sys.stderr)
                    if store == "pgvector":
                        async with await _pg_connect() as conn:
                            await conn.execute("DROP TABLE IF EXISTS ragflow_pointers")
                            for name in await _tables(conn):
                                await conn.execute(f'DROP TABLE "{name}"')
                    result = await measure(store, chunks, folder, corpus, server, data, args)
                    results.append(result)
                    if store == "milvus":
                        shutil.rmtree(folder, ignore_errors=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"\n{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}; stores under {args.stores}"
    )
    print_tables(results)


async def _pg_connect() -> Any:
    import psycopg

    return await psycopg.AsyncConnection.connect(os.environ["PGVECTOR_DSN"], autocommit=True)


async def _tables(conn: Any) -> list[str]:
    cursor = await conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = 'public' AND tablename LIKE %s",
        (f"{COLLECTION}%",),
    )
    return [row[0] for row in await cursor.fetchall()]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=textwrap.dedent(__doc__ or ""),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--chunks", type=int, nargs="+", default=[2000, 20000])
    parser.add_argument(
        "--backends", nargs="+", default=["pgvector", "milvus"], choices=sorted(STORE_BLOCKS)
    )
    parser.add_argument("--repeats", type=int, default=9, help="switches alone, back and forth")
    parser.add_argument("--cycles", type=int, default=2, help="extra rebuilds with keep_previous 0")
    shm = Path("/dev/shm")
    parser.add_argument("--stores", type=Path, default=shm if shm.is_dir() else None)
    parser.add_argument(
        "--corpora", type=Path, default=Path(tempfile.gettempdir()) / "ragflow-bench"
    )
    args = parser.parse_args()
    asyncio.run(main_async(args))


if __name__ == "__main__":
    main()
