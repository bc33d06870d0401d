"""`serve --refresh-every`: searches with and without a refresh running, and an edit's lag.

    python bench/refresh.py                      # 300 files on Qdrant Edge, hashing model
    python bench/refresh.py --files 1000 --seconds 20 --store qdrant

A corpus of ``--files`` generated text files (six paragraphs each) is indexed,
then ``ragflow-config serve`` runs in a child process with ``--refresh-every``.
Two threads search it over HTTP without pause (top_k 10, keep-alive), each phase
for ``--seconds``:

- ``idle``: no refresh runs (the period is long, and the start's one is over);
- ``edits``: one file edited and ``POST .../refresh`` asked for again as soon as
  the last one ended: small refreshes back to back;
- ``rebuild``: the chunker's size changed in the pipeline file, so the refresh
  re-chunks and re-embeds every file into a new collection beside the live one,
  then switches; the phase lasts as long as the rebuild.

Each phase reports searches per second, p50 and p99 latency, failed searches
and the server's CPU seconds per search (all threads, /proc; it includes the
refresh's work, which is why it rises). Then the lag: a new word written into a
file, and the time until a search finds it, ``--lags`` times, with
``--refresh-every 1s`` and then with ``--watch``. The host's load is printed
beside, since two cores are shared; read ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from serve import percentile, process_cpu  # noqa: E402

STORES = {
    "qdrant_edge": "{type: qdrant_edge, parameters: {path: store}}",
    "qdrant": "{type: qdrant, parameters: {path: store}}",
}
PIPELINE = """\
version: 1
vector_stores:
  store: {store}
embeddings:
  hashing: {{type: hashing, parameters: {{dimensions: 256}}}}
knowledge_bases:
  - name: docs
    description: generated text
    sources: [{{path: docs}}]
    parsers: [{{type: text}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 64, overlap: 0}}}}
    embedding: hashing
    vector_store: store
    collection: docs
    prune: true
"""
WORDS = [
    *("harbour", "tide", "ship", "anchor", "sail", "rope", "gull", "wave", "pier", "lantern"),
    *("storm", "compass", "chart", "keel", "mast", "deck", "hull", "cargo", "crew", "captain"),
    *("reef", "shoal", "current", "beacon"),
]
QUERIES = [f"{a} {b}" for a, b in zip(WORDS, WORDS[3:] + WORDS[:3], strict=True)]


def _text(n: int, marker: str = "") -> str:
    words = [WORDS[(n * 7 + i * 3) % len(WORDS)] for i in range(60)]
    paragraphs = [" ".join(words[i : i + 10]) + f" file {n} part {i}." for i in range(0, 60, 10)]
    return "\n\n".join(paragraphs) + (f"\n\n{marker}\n" if marker else "\n")


class Server:
    def __init__(self, file: Path, *args: str) -> None:
        command = [sys.executable, "-m", "ragflow_config.cli", "serve", str(file)]
        self.process = subprocess.Popen(
            [*command, "--port", "0", "--no-access-log", *args],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if line.startswith("serving "):
                self.url = line.split(" on ", 1)[1].split(" ", 1)[0]
                break
        else:
            raise SystemExit("the server did not start")
        threading.Thread(target=self.process.stderr.read, daemon=True).start()
        self.cpu = process_cpu(self.process.pid)
        self.client = httpx.Client(base_url=self.url, timeout=120)

    def status(self) -> dict[str, Any]:
        refresh: dict[str, Any] = self.client.get("/v1/knowledge-bases/docs").json()["refresh"]
        return refresh

    def settled(self) -> dict[str, Any]:
        """The last refresh, once none runs and one has ended."""
        while True:
            status = self.status()
            if status["running"] is None and status["last"] is not None:
                return status
            time.sleep(0.1)

    def stop(self) -> None:
        self.client.close()
        self.process.terminate()
        self.process.wait(timeout=120)


def load(
    server: Server, seconds: float, during: Callable[[], bool] | None = None
) -> dict[str, Any]:
    """Two threads searching for ``seconds`` (and while ``during`` holds, when given)."""
    latencies: list[float] = []
    failures = 0
    stop = threading.Event()

    def search() -> None:
        nonlocal failures
        with httpx.Client(base_url=server.url, timeout=120) as client:
            n = 0
            while not stop.is_set():
                started = time.perf_counter()
                answer = client.post(
                    "/v1/knowledge-bases/docs/search",
                    json={"query": QUERIES[n % len(QUERIES)], "top_k": 10},
                )
                latencies.append(time.perf_counter() - started)
                failures += answer.status_code != 200
                n += 1

    cpu, wall = server.cpu(), time.perf_counter()
    threads = [threading.Thread(target=search) for _ in range(2)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline or (during is not None and during()):
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - wall
    searches = len(latencies)
    return {
        "searches": searches,
        "per_second": round(searches / wall, 1),
        "p50_ms": round(1000 * percentile(latencies, 0.5), 1),
        "p99_ms": round(1000 * percentile(latencies, 0.99), 1),
        "failed": failures,
        "server_cpu_ms_per_search": round(1000 * (server.cpu() - cpu) / max(searches, 1), 2),
        "seconds": round(wall, 1),
    }


def lags(server: Server, folder: Path, count: int, tag: str) -> list[float]:
    """Seconds from a file's edit to a search finding its new word (``tag``: unique per call)."""
    found = []
    for n in range(count):
        word = f"zeppelin{tag}{n}x"
        started = time.perf_counter()
        # The file becomes the word alone, so its one chunk is the query's best hit.
        (folder / "docs" / f"f{n:05d}.txt").write_text(f"{word} {word} {word}\n")
        while True:
            hits = server.client.post(
                "/v1/knowledge-bases/docs/search", json={"query": word, "top_k": 3}
            ).json()["hits"]
            if any(word in hit["chunk"]["content"]["text"] for hit in hits):
                break
            time.sleep(0.02)
        found.append(round(time.perf_counter() - started, 2))
        time.sleep(1.5)  # the next edit starts after the refresh that served this one
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--lags", type=int, default=5)
    parser.add_argument("--store", choices=sorted(STORES), default="qdrant_edge")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from ragflow_config.pipeline import Pipeline, RunOptions

    results: dict[str, Any] = {"files": args.files, "store": args.store, "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory(prefix="ragflow-refresh-") as tmp:
        folder = Path(tmp)
        (folder / "docs").mkdir()
        for n in range(args.files):
            (folder / "docs" / f"f{n:05d}.txt").write_text(_text(n))
        file = folder / "pipeline.yaml"
        file.write_text(PIPELINE.format(store=STORES[args.store]))
        import asyncio

        started = time.perf_counter()
        asyncio.run(Pipeline.load(file).run(options=RunOptions()))
        results["first_run_seconds"] = round(time.perf_counter() - started, 1)
        results["load_before"] = os.getloadavg()[0]

        server = Server(file, "--refresh-every", "1h")
        server.settled()
        results["idle"] = load(server, args.seconds)

        stop_editing = threading.Event()
        refreshes: list[float] = []

        def edit_and_refresh() -> None:
            n = 0
            while not stop_editing.is_set():
                server.settled()
                if n:
                    refreshes.append(server.status()["last"]["seconds"])
                (folder / "docs" / f"f{n % args.files:05d}.txt").write_text(_text(n, f"e{n}"))
                server.client.post("/v1/knowledge-bases/docs/refresh")
                time.sleep(0.1)
                n += 1

        editor = threading.Thread(target=edit_and_refresh)
        editor.start()
        results["edits"] = load(server, args.seconds)
        stop_editing.set()
        editor.join()
        results["edits"]["refreshes"] = len(refreshes)
        results["edits"]["refresh_seconds_median"] = statistics.median(refreshes or [0])
        results["edits"]["last_refresh"] = server.settled()["last"]

        file.write_text(file.read_text().replace("chunk_size: 64", "chunk_size: 128"))
        server.client.post("/v1/knowledge-bases/docs/refresh")
        while server.status()["running"] is None:
            time.sleep(0.05)
        results["rebuild"] = load(server, 0, lambda: server.status()["running"] is not None)
        results["rebuild"]["refresh"] = server.settled()["last"]
        server.stop()

        for how in (["--refresh-every", "1s"], ["--watch"]):
            server = Server(file, *how)
            server.settled()
            tag = "w" if "--watch" in how else "p"
            results[f"lag {' '.join(how)}"] = found = lags(server, folder, args.lags, tag)
            results[f"lag {' '.join(how)} median"] = statistics.median(found)
            server.stop()
        results["load_after"] = os.getloadavg()[0]

    text = json.dumps(results, indent=2)
    print(text)
    if args.json:
        args.json.write_text(text + "\n")


if __name__ == "__main__":
    main()
