"""PgVectorStore search: the new defaults against the search before them, on one table.

    python bench/pgvector_search.py                  # 20,000 rows, 200 queries, 3 repetitions
    python bench/pgvector_search.py --rows 2000 --reps 5

Starts a throwaway PostgreSQL + pgvector (``tests/_postgres.py``), fills one
table with hashing-model vectors (384 dimensions) of 40-word windows of
``pipelines/corpus``, and runs the same queries (8-word windows) through:

- ``before``: ``PgVectorStore`` as of commit 1f4f062 (ef_search max(top_k, 40),
  ``LIMIT top_k`` straight from a relaxed iterative scan), loaded from git;
- ``now``: ``PgVectorStore`` with its default parameters;
- ``now, ef_search=40``: the new statement with the old candidate count;
- ``exact``: ``PgVectorStore(exact=True)``.

Each repetition runs the cases back to back in rotating order. Reported per
case: median ms per query, the ratio to ``before`` within each repetition,
CPU seconds of the server backend serving the store (from /proc) and of this
process, and how many queries' top-k scores differ from the exact ones,
unfiltered and under a filter matching 1 % of the rows (planner's choice of plan).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BEFORE = "1f4f062"
DIMENSIONS = 384
TOP_K = 5


def windows(rng: random.Random, words: list[str], size: int, count: int) -> list[str]:
    return [
        " ".join(words[start : start + size])
        for start in (rng.randrange(len(words) - size) for _ in range(count))
    ]


def store_before() -> type:
    """``PgVectorStore`` as it was at ``BEFORE``, imported beside today's package."""
    source = subprocess.run(
        ["git", "show", f"{BEFORE}:ragflow_config/rag/_stores/pgvector.py"],
        cwd=HERE.parent,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp(prefix="ragflow-bench-")) / "pgvector_before.py"
    path.write_text(source, encoding="utf-8")
    name = "ragflow_config.rag._stores.pgvector_before"  # its relative imports resolve there
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module.PgVectorStore  # type: ignore[no-any-return]


def backend_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def main(args: argparse.Namespace) -> None:
    import psycopg

    from ragflow_config.credential import PostgresCredential
    from ragflow_config.embedding import HashingEmbeddingModel
    from ragflow_config.message import TextBlock
    from ragflow_config.rag import Chunk, PgVectorStore, VectorRecord

    sys.path.insert(0, str(HERE.parent / "tests"))
    from _postgres import embedded_postgres_server

    rng = random.Random(1)
    corpus = HERE.parent / "pipelines" / "corpus"
    words = [
        word
        for path in sorted(corpus.rglob("*"))
        if path.suffix in {".md", ".rst", ".txt"}
        for word in re.split(r"\s+", path.read_text("utf-8"))
        if word
    ]
    model = HashingEmbeddingModel(dimensions=DIMENSIONS)
    texts = windows(rng, words, 40, args.rows)
    vectors = [model.embed_text(text) for text in texts]
    shelf = [i % 100 == 7 for i in range(args.rows)]
    records = [
        VectorRecord(
            vector=vector,
            document_id=f"w{i}",
            chunk=Chunk(
                content=TextBlock(text=text),
                source=f"w{i}.txt",
                chunk_index=0,
                total_chunks=1,
                metadata={"shelf": "a" if on else "b"},
            ),
        )
        for i, (text, vector, on) in enumerate(zip(texts, vectors, shelf, strict=True))
    ]
    queries = [model.embed_text(text) for text in windows(rng, words, 8, args.queries)]
    filters: list[dict[str, Any] | None] = [None, {"shelf": "a"}]

    with embedded_postgres_server() as dsn:
        credential = PostgresCredential(dsn=dsn)
        cases = {
            "before": store_before()(credential=credential),
            "now": PgVectorStore(credential=credential),
            "now, ef_search=40": PgVectorStore(credential=credential, ef_search=40),
            "exact": PgVectorStore(credential=credential, exact=True),
        }
        async with cases["now"] as store:
            await store.create_collection("bench", DIMENSIONS)
            await store.insert("bench", records)
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as admin:
            await admin.execute("VACUUM ANALYZE bench")

            answers: dict[str, list[list[float]]] = {}
            wall: dict[str, list[float]] = {name: [] for name in cases}
            ratios: dict[str, list[float]] = {name: [] for name in cases}
            server_cpu = dict.fromkeys(cases, 0.0)
            client_cpu = dict.fromkeys(cases, 0.0)
            names = list(cases)
            for rep in range(args.reps):
                order = names[rep % len(names) :] + names[: rep % len(names)]
                seconds = {}
                for name in order:
                    async with cases[name] as store:
                        await store.search("bench", queries[0], top_k=TOP_K)  # connect first
                        cursor = await admin.execute(
                            "SELECT pid FROM pg_stat_activity"
                            " WHERE application_name = 'ragflow-config'"
                        )
                        (pid,) = await cursor.fetchone()  # type: ignore[misc]
                        server = backend_cpu_seconds(pid)
                        client = time.process_time()
                        start = time.perf_counter()
                        scores = [
                            [
                                r.score
                                for r in await store.search(
                                    "bench", query, top_k=TOP_K, metadata_filter=where
                                )
                            ]
                            for where in filters
                            for query in queries
                        ]
                        seconds[name] = time.perf_counter() - start
                        client_cpu[name] += time.process_time() - client
                        server_cpu[name] += backend_cpu_seconds(pid) - server
                    answers[name] = scores
                    wall[name].append(seconds[name] / len(scores) * 1000)
                for name in names:
                    ratios[name].append(seconds[name] / seconds["before"])

    exact = answers["exact"]
    searches = len(exact)
    print(f"{args.rows} rows x {DIMENSIONS} dims, {args.queries} queries unfiltered + the same")
    print(f"under a 1 % filter, top_k={TOP_K}, {args.reps} repetitions; nproc {os.cpu_count()}")
    print()
    print("| case | median ms/search | / before, median (range) | server CPU s | client CPU s |")
    print("| --- | ---: | --- | ---: | ---: |")
    for name in names:
        r = ratios[name]
        print(
            f"| {name} | {statistics.median(wall[name]):.2f} | {statistics.median(r):.2f}x "
            f"({min(r):.2f}-{max(r):.2f}) | {server_cpu[name]:.2f} | {client_cpu[name]:.2f} |"
        )
    print()
    print("| case | misses, unfiltered | misses, 1 % filter |")
    print("| --- | ---: | ---: |")
    half = searches // 2
    for name in names:
        wrong = [
            any(abs(a - b) > 1e-5 for a, b in zip(got, want, strict=True)) or len(got) != len(want)
            for got, want in zip(answers[name], exact, strict=True)
        ]
        print(f"| {name} | {sum(wrong[:half])}/{half} | {sum(wrong[half:])}/{half} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--reps", type=int, default=3)
    asyncio.run(main(parser.parse_args()))
