"""Issue 26 item 2: what an unchanged re-run's state read costs, before and after.

    python bench/state_reads.py                            # 8,000 files; pgvector at 100k and 1M chunks
    python bench/state_reads.py --files 500 --chunks 20000 # a smoke run

Two parts, each comparing ``list_documents`` as of ``BEFORE`` (git's version
of each store's method, loaded beside today's package and bound to today's
store class) with today's, in the same run:

1. ``Pipeline.run`` on ``bench/make_corpus.py``'s corpus of ``--files`` files
   (hashing model, to keep the full run short; the state read does not depend
   on the model), on pgvector, Milvus Lite and Qdrant local: one full run, then
   unchanged re-runs with the old and the new read, in rotating order. Each
   case runs in a fresh interpreter, measured as ``bench/run.py`` does (wall,
   CPU seconds of the whole process tree, peak RSS of the tree); the state
   read's own seconds are timed inside the run.
2. pgvector with generated rows inserted directly in SQL (chunk 0s carry
   the runner's state, later chunks the revision alone, 800 characters of
   content each): the state read alone at ``--chunks``, as documents of 10 and
   of 100 chunks, with this process's and the server backend's CPU seconds.

Results are printed as Markdown tables for ``bench/README.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BEFORE = "4db8245"  # main before issue 26 item 2
STORES = {  # backend -> (module, class, store path inside the case folder)
    "pgvector": ("pgvector", "PgVectorStore", "unused"),
    "milvus": ("milvus", "MilvusLiteStore", "bench.db"),
    "qdrant": ("qdrant", "QdrantStore", "qdrant"),
}


def old_module(name: str, imports: dict[str, str]) -> Any:
    """``ragflow_config/rag/_stores/<name>.py`` at ``BEFORE``, imported beside today's."""
    source = subprocess.run(
        ["git", "show", f"{BEFORE}:ragflow_config/rag/_stores/{name}.py"],
        cwd=HERE.parent,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for module, renamed in imports.items():
        source = source.replace(f"from .{module} import", f"from .{renamed} import")
    path = Path(tempfile.mkdtemp(prefix="ragflow-bench-")) / f"{name}_before.py"
    path.write_text(source, encoding="utf-8")
    qualified = f"ragflow_config.rag._stores.{name}_before"  # relative imports resolve there
    spec = importlib.util.spec_from_file_location(qualified, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[qualified] = module
    spec.loader.exec_module(module)
    return module


def use_old_read(backend: str) -> None:
    """Bind the ``BEFORE`` ``list_documents`` (and the helpers it used) to today's store class."""
    module_name, class_name, _ = STORES[backend]
    old_module("base", {})  # its ``summarize`` is gone from today's base
    old = old_module(module_name, {"base": "base_before"})
    today = importlib.import_module(f"ragflow_config.rag._stores.{module_name}")
    getattr(today, class_name).list_documents = getattr(old, class_name).list_documents


async def child(args: argparse.Namespace) -> None:
    """One run in this interpreter; prints ``RESULT {...}``."""
    sys.path.insert(0, str(HERE))
    import cases

    from ragflow_config.rag import KnowledgeBase

    for module in ("qdrant_client", "pymilvus", "psycopg", "docx", "pptx", "openpyxl"):
        importlib.import_module(module)  # before the clock, as bench/cases.py does
    if args.before:
        use_old_read(args.backend)
    read_seconds = 0.0
    listed = KnowledgeBase.list_documents

    async def timed(self: Any) -> Any:
        nonlocal read_seconds
        started = time.perf_counter()
        try:
            return await listed(self)
        finally:
            read_seconds += time.perf_counter() - started

    KnowledgeBase.list_documents = timed  # type: ignore[method-assign]
    args.model, args.workers = "hashing", None
    result = await cases.ours(args)
    print("RESULT " + json.dumps({**result, "read_seconds": read_seconds}), flush=True)


def measure(backend: str, corpus: Path, store: Path, env: dict[str, str], before: bool) -> Any:
    from run import MB, Measured, _PeakSampler

    command = [sys.executable, __file__, "child", "--backend", backend]
    command += ["--corpus", str(corpus), "--store", str(store)] + (["--before"] if before else [])
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=out, stderr=err, env={**os.environ, **env})
        sampler = _PeakSampler(process.pid)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        elapsed = time.perf_counter() - started
        sampler.stopped.set()
        sampler.join()
        out.seek(0)
        err.seek(0)
        lines = [line for line in out.read().splitlines() if line.startswith("RESULT ")]
        if os.waitstatus_to_exitcode(status) != 0 or not lines:
            raise SystemExit(f"{' '.join(command)} failed:\n{err.read()[-3000:]}")
    return Measured(
        json.loads(lines[-1][len("RESULT ") :]),
        elapsed,
        sampler.peak / MB,
        sampler.peak_pss / MB,
        usage.ru_maxrss / 1024,
        usage.ru_utime + usage.ru_stime + sum(sampler.descendants_cpu.values()),
    )


def runs_table(args: argparse.Namespace) -> list[str]:
    from make_corpus import make_corpus

    sys.path.insert(0, str(HERE.parent / "tests"))
    from _postgres import embedded_postgres_server

    corpus = args.corpora / f"corpus-{args.files}"
    make_corpus(corpus, args.files)
    lines = [
        "| store | case | files | chunks | wall s | CPU s (tree) | peak RSS tree MB "
        "| state read s | wall / full | CPU / full | peak / full |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for backend in args.backends:
        folder = Path(tempfile.mkdtemp(prefix=f"state-{backend}-", dir=args.stores))
        store = folder / STORES[backend][2]
        with embedded_postgres_server(args.stores) as dsn:  # used by the pgvector runs only
            env = {"PGVECTOR_DSN": dsn}
            print(f"{backend}: full run", file=sys.stderr, flush=True)
            full = measure(backend, corpus, store, env, before=False)
            cases: list[tuple[str, Any]] = [("full run", full)]
            for rep in range(args.reps):
                for before in (rep % 2 == 0, rep % 2 == 1):
                    label = "re-run, before" if before else "re-run, after"
                    print(f"{backend}: {label}", file=sys.stderr, flush=True)
                    measured = measure(backend, corpus, store, env, before)
                    assert measured.result["unchanged"] == full.result["files"], measured.result
                    cases.append((label, measured))
        shutil.rmtree(folder, ignore_errors=True)
        for label, m in cases:
            row(
                lines,
                f"| {backend} | {label} | {m.result['files']} | {full.result['chunks']} "
                f"| {m.process_seconds:.1f} | {m.cpu_seconds:.1f} | {m.peak_tree_mb:.0f} "
                f"| {m.result['read_seconds']:.2f} | {m.process_seconds / full.process_seconds:.3f} "
                f"| {m.cpu_seconds / full.cpu_seconds:.3f} | {m.peak_tree_mb / full.peak_tree_mb:.2f} |",
            )
    return lines


def row(lines: list[str], text: str) -> None:
    """Keep a table row, and show it at once: a long run may not get to the end."""
    lines.append(text)
    print(text, file=sys.stderr, flush=True)


def backend_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


FILL = """
INSERT INTO {table} (document_id, chunk_index, embedding, chunk, metadata)
SELECT 'doc-' || d, c, %(vector)s::vector, chunk, chunk->'metadata'
FROM generate_series(0, %(documents)s - 1) AS d, generate_series(0, %(per)s - 1) AS c,
LATERAL (SELECT jsonb_build_object(
    'content', jsonb_build_object('type', 'text', 'text',
        (SELECT string_agg(md5((d * 1000 + c + k)::text), ' ') FROM generate_series(1, 24 + 0 * c) AS k)),
    'source', 'part/doc-' || d || '.md', 'chunk_index', c, 'total_chunks', %(per)s,
    'metadata', CASE WHEN c = 0 THEN jsonb_build_object('ragflow', jsonb_build_object(
        'content_hash', md5(d::text), 'revision', left(md5('r' || d), 16), 'chunks', %(per)s,
        'path', 'part/doc-' || d || '.md', 'fingerprint', jsonb_build_object(
            'embedding', 'e', 'chunker', 'c', 'parsers', 'p')))
    ELSE jsonb_build_object('ragflow', jsonb_build_object('revision', left(md5('r' || d), 16)))
    END) AS chunk) AS generated
"""


async def scale_table(args: argparse.Namespace) -> list[str]:
    import psycopg
    from psycopg import sql

    from ragflow_config.credential import PostgresCredential
    from ragflow_config.rag import PgVectorStore

    sys.path.insert(0, str(HERE.parent / "tests"))
    from _postgres import embedded_postgres_server

    old = old_module("pgvector", {})
    lines = [
        "| chunks | documents | chunks per document | read | wall s | CPU s, this process "
        "| CPU s, server | ms per document | after / before (wall) |",
        "| ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    with embedded_postgres_server(args.stores) as dsn:
        credential = PostgresCredential(dsn=dsn)
        reads = {"before": old.PgVectorStore(credential=credential)}
        reads["after"] = PgVectorStore(credential=credential)
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
            for chunks in args.chunks:
                for per in (10, 100):
                    documents = chunks // per
                    name = f"scale_{chunks}_{per}"
                    async with reads["after"] as store:
                        await store.create_collection(name, 8)
                        table = store._table(name)
                    # The vector and metadata indexes serve searches, not this read:
                    # dropped so that a million rows load in minutes.
                    for index in await (
                        await admin.execute(
                            "SELECT indexname FROM pg_indexes WHERE tablename = %s"
                            " AND indexname NOT LIKE '%%pkey'",
                            (name,),
                        )
                    ).fetchall():
                        await admin.execute(
                            sql.SQL("DROP INDEX {}").format(sql.Identifier(index[0]))
                        )
                    print(f"pgvector: filling {name}", file=sys.stderr, flush=True)
                    await admin.execute(
                        sql.SQL(FILL).format(table=table),
                        {"vector": str([0.5] * 8), "documents": documents, "per": per},
                    )
                    await admin.execute(sql.SQL("VACUUM ANALYZE {}").format(table))
                    walls: dict[str, float] = {}
                    for rep in range(args.reps):
                        for label in ("before", "after")[:: 1 if rep % 2 == 0 else -1]:
                            async with reads[label] as store:
                                cursor = await store._run(
                                    lambda c: c.execute("SELECT pg_backend_pid()")
                                )
                                pid = (await cursor.fetchone())[0]
                                server = backend_cpu_seconds(pid)
                                cpu = time.process_time()
                                started = time.perf_counter()
                                summaries = await store.list_documents(name)
                                walls[label] = time.perf_counter() - started
                                cpu = time.process_time() - cpu
                                server = backend_cpu_seconds(pid) - server
                            assert len(summaries) == documents
                            assert {s.chunk_count for s in summaries} == {per}
                            ratio = (
                                f"{walls['after'] / walls['before']:.2f}" if len(walls) == 2 else ""
                            )
                            row(
                                lines,
                                f"| {chunks:,} | {documents:,} | {per} | {label} "
                                f"| {walls[label]:.2f} | {cpu:.2f} | {server:.2f} "
                                f"| {walls[label] / documents * 1000:.3f} | {ratio} |",
                            )
                    await admin.execute(sql.SQL("DROP TABLE {}").format(table))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("part", nargs="?", choices=["all", "runs", "scale", "child"], default="all")
    parser.add_argument("--files", type=int, default=8000)
    parser.add_argument("--backends", nargs="+", default=["pgvector", "milvus", "qdrant"])
    parser.add_argument("--chunks", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--corpora", type=Path, default=Path(tempfile.gettempdir()))
    parser.add_argument("--stores", type=Path, default=Path("/dev/shm"))
    # child only
    parser.add_argument("--backend", choices=sorted(STORES))
    parser.add_argument("--corpus", type=Path)
    parser.add_argument("--store", type=Path)
    parser.add_argument("--before", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, str(HERE))
    if args.part == "child":
        asyncio.run(child(args))
        return
    if args.part in ("all", "runs"):
        print("\n".join(runs_table(args)), flush=True)
    if args.part in ("all", "scale"):
        print("\n".join(asyncio.run(scale_table(args))), flush=True)


if __name__ == "__main__":
    main()
