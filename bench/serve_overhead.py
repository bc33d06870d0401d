"""What `serve`'s metrics cost a search, measured in one process (issue 53, item 4).

    python bench/serve_overhead.py                        # 300 searches a round, 6 rounds
    python bench/serve_overhead.py --searches 500 --rounds 8 --profile

The hashing sample (pipelines/local-hashing.yaml, Qdrant Edge: the model costs
next to nothing, so what remains is the server's own cost) is indexed by
`ragflow-config run` in a temporary copy, then opened once in this process.
Each round sends ``--searches`` `POST /v1/knowledge-bases/python-docs/search`
through the whole ASGI application (every middleware: outcome, Host check,
body limit, admission; httpx's ASGITransport, no sockets), in rotating order,
to two applications over the same open knowledge base:

- ``metrics off``: the application with its Prometheus series never touched
  (its ``Metrics`` records nothing, and no step observer is installed);
- ``metrics on``: as `serve` runs it, tracing off (no OTEL_* variable): each
  request counted and timed, each retrieval, embedding and store search timed.

CPU is this process's (every thread, ``time.process_time``) per search; the
ratio is taken within each round, and the median and range are shown.
``--profile`` also runs a round of ``metrics on`` under cProfile and prints
ragflow_config's and prometheus_client's costliest functions.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import os
import pstats
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any
from unittest import mock

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
KB = "python-docs"
QUERIES = [
    "How do I read a file line by line?",
    "sort a list of dictionaries by a key",
    "what does the with statement do",
    "configure logging to a file",
    "difference between a list and a tuple",
]


def _sample(folder: Path) -> Path:
    (folder / "pipelines").mkdir()
    shutil.copytree(REPO / "pipelines/corpus", folder / "pipelines/corpus")
    file = folder / "pipelines" / "local-hashing.yaml"
    shutil.copy(REPO / "pipelines" / "local-hashing.yaml", file)
    subprocess.run(
        [sys.executable, "-m", "ragflow_config.cli", "run", str(file)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return file


async def _round(client: Any, searches: int) -> float:
    """CPU seconds per search over ``searches`` searches."""
    started = time.process_time()
    for number in range(searches):
        answer = await client.post(
            f"/v1/knowledge-bases/{KB}/search",
            json={"query": QUERIES[number % len(QUERIES)], "top_k": 5},
        )
        if answer.status_code != 200:
            raise RuntimeError(answer.text)
    return (time.process_time() - started) / searches


async def main_async(args: argparse.Namespace) -> int:
    import httpx

    from ragflow_config._observe import observing
    from ragflow_config.pipeline import Pipeline
    from ragflow_config.server import KnowledgeService, ServeOptions, create_app
    from ragflow_config.server._metrics import Metrics

    with tempfile.TemporaryDirectory(prefix="serve-overhead-") as temporary:
        file = _sample(Path(temporary))
        options = ServeOptions(access_log=False, max_searches_per_client=1000)
        async with KnowledgeService(Pipeline.load(file)) as service:
            with_metrics = create_app(service, options)
            # The same application, whose series are never touched: no request is counted,
            # and no step observer is installed below.
            with mock.patch.object(Metrics, "answered", lambda *_: None):
                without = create_app(service, options)
            clients = {
                "metrics off": httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=without), base_url="http://127.0.0.1"
                ),
                "metrics on": httpx.AsyncClient(
                    transport=httpx.ASGITransport(app=with_metrics), base_url="http://127.0.0.1"
                ),
            }
            metrics = with_metrics.state.metrics

            async def measure(name: str) -> float:
                if name == "metrics on":
                    with observing(metrics):
                        return await _round(clients[name], args.searches)
                return await _round(clients[name], args.searches)

            for name in clients:  # warm both: first requests build caches
                await measure(name)
            names = list(clients)
            per_search: dict[str, list[float]] = {name: [] for name in names}
            for number in range(args.rounds):
                order = names[number % 2 :] + names[: number % 2]
                for name in order:
                    per_search[name].append(await measure(name))
                print(
                    f"round {number + 1}: "
                    + ", ".join(f"{n} {per_search[n][-1] * 1e3:.3f} ms CPU" for n in names),
                    flush=True,
                )
            if args.profile:
                profile = cProfile.Profile()
                profile.enable()
                await measure("metrics on")
                profile.disable()
            for client in clients.values():
                await client.aclose()

    ratios = [
        on / off
        for on, off in zip(per_search["metrics on"], per_search["metrics off"], strict=True)
    ]
    print(
        f"\n{args.searches} searches a round, {args.rounds} rounds, load {os.getloadavg()[0]:.1f}"
    )
    print("| case | CPU ms per search (median) |")
    print("| --- | --- |")
    for name in names:
        print(f"| {name} | {statistics.median(per_search[name]) * 1e3:.3f} |")
    print(
        f"\nmetrics on / off, CPU per search: median {statistics.median(ratios):.3f} "
        f"(range {min(ratios):.3f}-{max(ratios):.3f})"
    )
    if args.profile:
        out = io.StringIO()
        stats = pstats.Stats(profile, stream=out).sort_stats("tottime")
        stats.print_stats(r"ragflow_config|prometheus_client", 25)
        print(out.getvalue())
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--searches", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--profile", action="store_true")
    return asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
