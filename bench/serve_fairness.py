"""A light client's latency while six heavy clients load `serve` (issue 53, item 4).

    python bench/serve_fairness.py                   # 150 light searches unloaded, 150 loaded
    python bench/serve_fairness.py --light 300 --heavy-connections 4

The hashing sample (pipelines/local-hashing.yaml on Qdrant Edge) is indexed,
then `ragflow-config serve` runs in a child process with its default
admission limits. Six heavy clients, each from its own loopback address
(127.0.0.2-7) over ``--heavy-connections`` connections, loop on
2,000-character queries with ``top_k`` 50 (the issue's probe); one light
client (127.0.0.8, one connection) sends short queries with ``top_k`` 5, one
after another: first alone, then under that load. The goal: the light
client's p99 under load within 5x its p99 alone. 429s are counted apart
(a refused search is an answer, not a latency).
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parent.parent
SEARCH = "/v1/knowledge-bases/python-docs/search"
SHORT = ["read a file", "sort a list", "logging to a file", "with statement", "list or tuple"]
LONG_SOURCE = (
    "How do I read a file line by line, sort the records by a key, log what happens to a file "
    "with a handler, and iterate over the items of a list or a tuple with a for statement? "
)
LONG = (LONG_SOURCE * (2000 // len(LONG_SOURCE) + 1))[:2000]


def _percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def _client(url: str, address: str) -> httpx.Client:
    return httpx.Client(
        base_url=url, timeout=120, transport=httpx.HTTPTransport(local_address=address)
    )


def _light(url: str, count: int) -> tuple[list[float], int]:
    """Seconds of each answered search, and the number refused (429)."""
    seconds: list[float] = []
    refused = 0
    with _client(url, "127.0.0.8") as client:
        for number in range(count):
            started = time.perf_counter()
            answer = client.post(SEARCH, json={"query": SHORT[number % len(SHORT)], "top_k": 5})
            if answer.status_code == 429:
                refused += 1
                continue
            answer.raise_for_status()
            seconds.append(time.perf_counter() - started)
    return seconds, refused


def _heavy(url: str, address: str, stop: threading.Event, counts: dict[str, int]) -> None:
    with _client(url, address) as client:
        while not stop.is_set():
            answer = client.post(SEARCH, json={"query": LONG, "top_k": 50})
            key = "refused" if answer.status_code == 429 else str(answer.status_code)
            counts[key] = counts.get(key, 0) + 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--light", type=int, default=150, help="light searches per phase")
    parser.add_argument("--heavy-connections", type=int, default=4, help="per heavy client")
    parser.add_argument(
        "--serve-option",
        action="append",
        default=[],
        metavar="OPTION=VALUE",
        help="passed to serve (--serve-option=--max-searches=2); repeatable",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="serve-fairness-") as temporary:
        folder = Path(temporary)
        (folder / "pipelines").mkdir()
        shutil.copytree(REPO / "pipelines/corpus", folder / "pipelines/corpus")
        file = folder / "pipelines" / "local-hashing.yaml"
        shutil.copy(REPO / "pipelines" / "local-hashing.yaml", file)
        subprocess.run(
            [sys.executable, "-m", "ragflow_config.cli", "run", str(file)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        server = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "ragflow_config.cli",
                "serve",
                str(file),
                "--port",
                "0",
                "--host",
                "127.0.0.1",
                "--no-access-log",
                *args.serve_option,
            ],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert server.stderr is not None
            url = ""
            for line in server.stderr:
                if line.startswith("serving ") and " on http://" in line:
                    url = line.split(" on ", 1)[1].split(" ", 1)[0]
                    break
            threading.Thread(target=server.stderr.read, daemon=True).start()  # drained
            _light(url, 20)  # warm
            alone, refused_alone = _light(url, args.light)
            stop = threading.Event()
            counts: dict[str, int] = {}
            heavy = [
                threading.Thread(target=_heavy, args=(url, f"127.0.0.{2 + c}", stop, counts))
                for c in range(6)
                for _ in range(args.heavy_connections)
            ]
            for thread in heavy:
                thread.start()
            time.sleep(3)  # the load under way
            loaded, refused_loaded = _light(url, args.light)
            stop.set()
            for thread in heavy:
                thread.join()
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=120)

    rows = {"alone": alone, "six heavy clients": loaded}
    print(f"\nserve {' '.join(args.serve_option) or '(defaults)'}; load {os.getloadavg()[0]:.1f}")
    print(f"heavy answers: {counts}")
    print("| light client | p50 ms | p99 ms | answered | refused |")
    print("| --- | --- | --- | --- | --- |")
    for (name, seconds), refused in zip(rows.items(), (refused_alone, refused_loaded), strict=True):
        print(
            f"| {name} | {statistics.median(seconds) * 1e3:.1f} | "
            f"{_percentile(seconds, 0.99) * 1e3:.1f} | {len(seconds)} | {refused} |"
        )
    ratio = _percentile(loaded, 0.99) / _percentile(alone, 0.99)
    print(f"\np99 under load / p99 alone: {ratio:.2f} (goal: at most 5)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
