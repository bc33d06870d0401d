"""Peak memory of indexing one large document: embedded and written in batches, or all at once.

    python bench/large_document.py [--megabytes 16] [--reps 2]

Each case runs in a fresh interpreter (hashing model, Qdrant local on
/dev/shm, the parser in-process): `batched` is the shipped
KnowledgeBase.write_batch (1024 chunks), `at once` sets it past the
document's chunk count, which is what insert_document did before. Printed:
peak RSS of the case process, its CPU seconds and wall time, and the
ratios batched / at once from the same run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

CASE = """
import asyncio, json, resource, sys, time
from ragflow_config.pipeline import Pipeline, RunOptions
from ragflow_config.rag import KnowledgeBase
KnowledgeBase.write_batch = int(sys.argv[2])
started = time.perf_counter()
report = asyncio.run(Pipeline.load(sys.argv[1]).run(options=RunOptions(workers=0)))
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({
    "wall": time.perf_counter() - started,
    "cpu": usage.ru_utime + usage.ru_stime,
    "peak_mb": usage.ru_maxrss / 1024,
    "chunks": report.knowledge_bases[0].chunks,
}))
"""

PIPELINE = """\
version: 1
vector_stores:
  disk: {{type: qdrant, parameters: {{path: {store}}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: 384}}}}
knowledge_bases:
  - name: big
    sources: [{{path: docs}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 256, overlap: 32}}}}
    embedding: model
    vector_store: disk
    collection: big
"""


def median(values: list[float]) -> float:
    return sorted(values)[len(values) // 2]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=16)
    parser.add_argument("--reps", type=int, default=2)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="ragflow-large-", dir="/dev/shm"))
    (root / "docs").mkdir()
    line = "The quick brown fox jumps over the lazy dog while the river runs. "
    (root / "docs" / "big.txt").write_text(line * (args.megabytes * 2**20 // len(line)))
    results: dict[str, list[dict[str, float]]] = {"batched": [], "at once": []}
    for rep in range(args.reps):
        for name, batch in (("batched", 1024), ("at once", 10**9)):
            store = root / f"store-{name.replace(' ', '')}-{rep}"
            pipeline = root / f"{store.name}.yaml"
            pipeline.write_text(PIPELINE.format(store=store))
            done = subprocess.run(
                [sys.executable, "-c", CASE, str(pipeline), str(batch)],
                capture_output=True,
                text=True,
                check=True,
            )
            results[name].append(json.loads(done.stdout))
    print(
        f"one {args.megabytes} MiB text file, {results['batched'][0]['chunks']} chunks, "
        f"{args.reps} reps, median of each"
    )
    print(f"{'case':<10} {'peak RSS MB':>12} {'CPU s':>8} {'wall s':>8}")
    medians = {}
    for name, runs in results.items():
        medians[name] = {key: median([r[key] for r in runs]) for key in ("peak_mb", "cpu", "wall")}
        m = medians[name]
        print(f"{name:<10} {m['peak_mb']:>12.0f} {m['cpu']:>8.1f} {m['wall']:>8.1f}")
    b, a = medians["batched"], medians["at once"]
    print(
        f"batched / at once: peak RSS {b['peak_mb'] / a['peak_mb']:.2f}x, "
        f"CPU {b['cpu'] / a['cpu']:.2f}x, wall {b['wall'] / a['wall']:.2f}x"
    )


if __name__ == "__main__":
    main()
