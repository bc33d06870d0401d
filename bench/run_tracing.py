"""What `run`'s traces cost: nothing measurable without OTEL_* set (issue 53, item 7).

    python bench/run_tracing.py                       # 300 files, 5 repetitions
    python bench/run_tracing.py --files 600 --reps 7 --baseline /work/main/.venv/bin/python

Each repetition runs, back to back in rotating order, a full `ragflow-config run`
of the same corpus (``bench/make_corpus.py``, text and Markdown only; the
hashing model; Qdrant Edge in a fresh folder each time; ``--workers 0``, so
every parse and chunk span is made in the traced process) as:

- ``baseline``: the ``--baseline`` interpreter's ragflow_config (a checkout
  without the run's spans: main's), no OTEL_* variable;
- ``ours``: this checkout, no OTEL_* variable: the spans' code runs, with no observer;
- ``ours, exporting``: this checkout with ``OTEL_EXPORTER_OTLP_ENDPOINT`` set to a
  receiver on loopback that reads and drops the batches: what tracing costs when on.

CPU is the case's whole process tree (``RUSAGE_CHILDREN``), user plus system;
the table gives the median ratio to ``baseline`` within a repetition, with its
range, as the machine is shared and noisy. Results go to
``bench/results/run_tracing.json``.
"""

from __future__ import annotations

import argparse
import http.server
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PIPELINE = """\
version: 1
vector_stores:
  edge: {type: qdrant_edge, parameters: {path: store}}
embeddings:
  hashing: {type: hashing, parameters: {dimensions: 256}}
knowledge_bases:
  - name: corpus
    description: The benchmark corpus.
    sources: [{path: corpus}]
    embedding: hashing
    vector_store: edge
    collection: corpus
"""


class _Sink(http.server.BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint that reads each batch and drops it."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


def _without_otel() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}


def _run(python: str, folder: Path, env: dict[str, str]) -> tuple[float, float]:
    """CPU seconds (the process tree's) and wall seconds of one full run into a fresh store."""
    store = folder / "store"
    shutil.rmtree(store, ignore_errors=True)
    file = folder / "pipeline.yaml"
    file.write_text(PIPELINE, encoding="utf-8")  # the corpus and store beside it
    command = [python, "-m", "ragflow_config.cli", "run", str(file), "--workers", "0", "--quiet"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--baseline", default="/work/main/.venv/bin/python")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "run_tracing.json")
    args = parser.parse_args()

    sink = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Sink)
    threading.Thread(target=sink.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{sink.server_address[1]}"
    plain = _without_otel()
    cases = {
        "baseline": (args.baseline, plain),
        "ours": (sys.executable, plain),
        "ours, exporting": (sys.executable, {**plain, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}),
    }
    results: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
    with tempfile.TemporaryDirectory(prefix="run-tracing-") as temporary:
        folder = Path(temporary)
        corpus = folder / "corpus"
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "make_corpus.py"),
                str(corpus),
                "--files",
                str(args.files),
                "--office-share",
                "0",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        names = list(cases)
        for rep in range(args.reps):
            order = names[rep % len(names) :] + names[: rep % len(names)]
            for name in order:
                python, env = cases[name]
                results[name].append(_run(python, folder, env))
            line = ", ".join(f"{n} {results[n][-1][0]:.2f} s CPU" for n in names)
            print(f"rep {rep + 1}: {line}", flush=True)
    sink.shutdown()

    rows = {}
    for name in names:
        ratios = [
            ours[0] / base[0] for ours, base in zip(results[name], results["baseline"], strict=True)
        ]
        rows[name] = {
            "cpu_seconds_median": statistics.median(c for c, _ in results[name]),
            "wall_seconds_median": statistics.median(w for _, w in results[name]),
            "cpu_ratio_median": statistics.median(ratios),
            "cpu_ratio_range": [min(ratios), max(ratios)],
        }
    print(f"\n{args.files} files, {args.reps} repetitions, load {os.getloadavg()[0]:.1f}")
    print("| case | CPU s (median) | wall s (median) | CPU / baseline (median, range) |")
    print("| --- | --- | --- | --- |")
    for name, row in rows.items():
        low, high = row["cpu_ratio_range"]
        print(
            f"| {name} | {row['cpu_seconds_median']:.2f} | {row['wall_seconds_median']:.2f} | "
            f"{row['cpu_ratio_median']:.3f} ({low:.3f}-{high:.3f}) |"
        )
    args.out.write_text(
        json.dumps({"files": args.files, "reps": args.reps, "cases": rows}, indent=2) + "\n",
        encoding="utf-8",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
