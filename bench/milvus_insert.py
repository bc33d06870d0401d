"""Milvus Lite: writing new rows with ``insert``, ``upsert``, or ``insert`` after a key check.

Issue 40 item 5. Each method fills its own fresh collection (the store's own
schema: 256 dimensions, chunk JSON of about 800 characters) to ``--rows``
rows, ``--batch`` rows a request, on one Milvus Lite file; the clock and the
CPU counters (this process and Milvus Lite's server process) are read at each
checkpoint, so a row's cost is shown as the collection grows. ``checked``
is what ``MilvusLiteStore.insert`` does on Milvus Lite: one primary-key query
for the batch's ids, then ``insert`` of the absent rows (``upsert`` of any
present). The methods run in rotating order, ``--reps`` times; medians.

    python bench/milvus_insert.py                     # 2k, 8k, 16k rows: about 2 min on 2 cores
    python bench/milvus_insert.py --rows 4000 --reps 1  # a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil

from ragflow_config.rag import MilvusLiteStore
from ragflow_config.rag._stores.milvus import milvus_name

METHODS = ("upsert", "insert", "checked")
CHECKPOINTS = (2_000, 8_000, 16_000)
DIMENSIONS = 256


def cpu_seconds() -> float:
    """CPU seconds of this process and its children (Milvus Lite's server), so far."""
    me = psutil.Process()
    total = sum(me.cpu_times()[:2])
    for child in me.children(recursive=True):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += sum(child.cpu_times()[:2])
    return total


def rows(start: int, count: int, rng: random.Random) -> list[dict[str, Any]]:
    text = " ".join(
        rng.choice(("river", "lantern", "copper", "meadow", "falcon")) for _ in range(130)
    )
    return [
        {
            "id": f"{n:064x}",
            "document_key": f"{n // 10:064x}",
            "document_id": f"doc-{n // 10}",
            "chunk_index": n % 10,
            "vector": [rng.random() for _ in range(DIMENSIONS)],
            "chunk": {"content": {"type": "text", "text": text}, "chunk_index": n % 10},
            "metadata": {"source": f"doc-{n // 10}.md"},
        }
        for n in range(start, start + count)
    ]


async def write(store: MilvusLiteStore, collection: str, method: str, batch: list[dict]) -> None:
    name = milvus_name(collection)
    if method == "checked":
        ids = ", ".join(f'"{row["id"]}"' for row in batch)
        held = await store.client.query(
            name, filter=f"id in [{ids}]", output_fields=["id"], consistency_level="Strong"
        )
        present = {row["id"] for row in held}
        fresh = [row for row in batch if row["id"] not in present]
        if fresh:
            await store.client.insert(name, fresh)
        if len(fresh) < len(batch):
            await store.client.upsert(name, [row for row in batch if row["id"] in present])
    else:
        await getattr(store.client, method)(name, batch)


async def fill(
    store: MilvusLiteStore, method: str, total: int, batch: int, checkpoints: list[int]
) -> list[tuple[float, float]]:
    """Wall and CPU seconds spent writing each segment between checkpoints."""
    collection = f"bench_{method}_{os.urandom(4).hex()}"
    await store.create_collection(collection, DIMENSIONS)
    rng = random.Random(7)
    segments = []
    written = 0
    for checkpoint in checkpoints:
        wall, cpu = 0.0, 0.0
        while written < checkpoint:
            data = rows(written, min(batch, checkpoint - written), rng)
            started, cpu_started = time.perf_counter(), cpu_seconds()
            await write(store, collection, method, data)
            wall += time.perf_counter() - started
            cpu += cpu_seconds() - cpu_started
            written += len(data)
        segments.append((wall, cpu))
    count = await store.client.query(milvus_name(collection), filter="", output_fields=["count(*)"])
    assert count[0]["count(*)"] == total, count  # no duplicate rows from any method
    await store.delete_collection(collection)
    return segments


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=CHECKPOINTS[-1], help="rows per collection")
    parser.add_argument("--batch", type=int, default=10, help="rows per request (a document)")
    parser.add_argument("--reps", type=int, default=3, help="repetitions of each method")
    args = parser.parse_args()
    checkpoints = [c for c in CHECKPOINTS if c < args.rows] + [args.rows]
    folder = Path(tempfile.mkdtemp(prefix="milvus-insert-", dir="/dev/shm"))
    print(f"{args.rows} rows, {args.batch} a request, {args.reps} rep(s); load {os.getloadavg()}")
    results: dict[str, list[list[tuple[float, float]]]] = {m: [] for m in METHODS}
    try:
        async with MilvusLiteStore(uri=str(folder / "bench.db")) as store:
            for rep in range(args.reps):
                for method in METHODS[rep % 3 :] + METHODS[: rep % 3]:
                    results[method].append(
                        await fill(store, method, args.rows, args.batch, checkpoints)
                    )
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    bounds = [0, *checkpoints]
    header = " | ".join(f"{a:,}-{b:,}" for a, b in itertools.pairwise(bounds))
    print(f"\nper row, by rows already in the collection (median of {args.reps})\n")
    print(f"| method | ms per row, wall: {header} | server+client CPU ms per row: {header} |")
    print("| --- |" + " ---: |" * (2 * len(checkpoints)))
    medians: dict[str, list[tuple[float, float]]] = {}
    for method, reps in results.items():
        cells = []
        for i in range(len(checkpoints)):
            size = bounds[i + 1] - bounds[i]
            wall = statistics.median(r[i][0] for r in reps) / size * 1000
            cpu = statistics.median(r[i][1] for r in reps) / size * 1000
            cells.append((wall, cpu))
        medians[method] = cells
        walls = " | ".join(f"{w:.2f}" for w, _ in cells)
        cpus = " | ".join(f"{c:.2f}" for _, c in cells)
        print(f"| {method} | {walls} | {cpus} |")
    print("\nwhole fill: rows/s, CPU s, and ratios against upsert in this run\n")
    print("| method | rows/s | wall s | CPU s | wall / upsert | CPU / upsert |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    totals = {
        m: (
            statistics.median(sum(s[0] for s in r) for r in reps),
            statistics.median(sum(s[1] for s in r) for r in reps),
        )
        for m, reps in results.items()
    }
    base_wall, base_cpu = totals["upsert"]
    for method, (wall, cpu) in totals.items():
        print(
            f"| {method} | {args.rows / wall:,.0f} | {wall:.1f} | {cpu:.1f} | "
            f"{wall / base_wall:.2f}x | {cpu / base_cpu:.2f}x |"
        )
    print(f"\nload at the end {os.getloadavg()}")


if __name__ == "__main__":
    asyncio.run(main())
