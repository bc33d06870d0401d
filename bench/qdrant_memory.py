"""Where the memory goes on Qdrant local at 8,000 files (issue 40).

    python bench/qdrant_memory.py measure [--cases ours ours-w0 floor] [--rounds 1] [--keep]
    python bench/qdrant_memory.py trace ours|ours-w0|floor
    python bench/qdrant_memory.py load STORE_FOLDER

``python`` is /work/bench-venv/bin/python (``bench/setup.sh``). The corpus is
``run.py``'s largest scale cell: ``make_corpus(corpus, 500, 16)``, 8,000
files, about 71k chunks, under /tmp/ragflow-bench; stores go on /dev/shm.

* ``measure`` runs each case of ``cases.py`` in a fresh interpreter on a
  fresh store (``ours``: default parser processes; ``ours-w0``: ``--workers
  0``; ``floor``) and reads ``/proc/PID/smaps_rollup`` of every process of
  its tree every 100 ms: peak RSS and PSS of the tree (summed within one
  sample) and of each process (main, fork server, parser processes,
  resource tracker), and the case process's high-water RSS from ``wait4``
  (``ru_maxrss``), which a sample misses when the peak is shorter than
  100 ms. RSS counts a page shared by forked processes once per process;
  PSS splits it, so the tree's PSS is what it takes from the machine.
  ``ours-w0-snapshot-off`` needs a ``cases.py`` with ``--local-snapshot``.
  ``--keep`` leaves the stores for ``load``.
* ``trace`` runs one case in this interpreter with ``tracemalloc`` on from
  before the first import and takes a snapshot when the case closes its
  Qdrant client (every point is still held then), plus the process's RSS
  and the traced memory right after each time Qdrant local doubles its
  vectors array (old and new arrays both alive: the transient peak).
  Allocations are grouped by who made them: the innermost frame in
  qdrant-client's local mode, in ragflow_config, an import, and so on.
* ``load`` opens a finished store folder with ``QdrantClient(path=...)``
  alone: what the in-memory points cost by themselves.

Nothing here is run by the test suite.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import linecache
import os
import shutil
import subprocess
import sys
import threading
import time
import tracemalloc
from collections import defaultdict
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _processes import role, rollup  # noqa: E402

MB = 1024 * 1024
CORPUS = Path("/tmp/ragflow-bench/corpus-500-x16")
STORES = Path("/dev/shm/ragflow-bench")
CASES = {
    "ours": ["ours"],
    "ours-w0": ["ours", "--workers", "0"],
    "floor": ["floor"],
    # cases.py from the commit that added the store's local_snapshot on:
    "ours-w0-snapshot-off": ["ours", "--workers", "0", "--local-snapshot", "off"],
}
FRAMES = 8  # enough to find the caller in ragflow_config or qdrant-client; 30 is 4x slower


def store_of(case: str) -> Path:
    return STORES / f"mem40-{case}" / "qdrant"


def ensure_corpus() -> None:
    from make_corpus import make_corpus

    print("corpus", make_corpus(CORPUS, 500, 16), flush=True)


# --- measure ---------------------------------------------------------------


class Sampler(threading.Thread):
    """Every 100 ms: smaps_rollup of each process of the tree; peaks per process and summed."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.roles: dict[int, str] = {}
        self.peak: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
        self.tree = {"rss": 0.0, "pss": 0.0}
        self.tree_pss_at = 0.0  # seconds after the start at which the tree's PSS peaked
        self.main_rss_series: list[tuple[float, float]] = []
        self.cpu: dict[int, float] = {}
        self.stopped = threading.Event()
        self.started_at = time.perf_counter()

    def run(self) -> None:
        while not self.stopped.wait(0.1):
            try:
                tree = [self.root, *self.root.children(recursive=True)]
            except psutil.NoSuchProcess:
                return
            rss = pss = 0.0
            for process in tree:
                try:
                    name = role(process, self.root.pid, self.roles)
                    memory = rollup(process.pid)
                    times = process.cpu_times()
                except (psutil.NoSuchProcess, psutil.ZombieProcess, OSError):  # it ended
                    continue
                self.cpu[process.pid] = times.user + times.system
                rss += memory["rss"]
                pss += memory["pss"]
                peak = self.peak[name]
                for field, value in memory.items():
                    peak[field] = max(peak[field], value)
                if name == "main":
                    self.main_rss_series.append(
                        (round(time.perf_counter() - self.started_at, 1), round(memory["rss"]))
                    )
            self.tree["rss"] = max(self.tree["rss"], rss)
            if pss > self.tree["pss"]:
                self.tree["pss"] = pss
                self.tree_pss_at = time.perf_counter() - self.started_at


def case_arguments(case: str, store: Path) -> list[str]:
    """``cases.py``'s arguments for ``case`` on the 8,000-file corpus, into ``store``."""
    return [*CASES[case], "--corpus", str(CORPUS), "--store", str(store), "--model", "hashing"]


def measure_one(case: str) -> dict[str, Any]:
    store = store_of(case)
    shutil.rmtree(store.parent, ignore_errors=True)
    command = [sys.executable, str(HERE / "cases.py"), *case_arguments(case, store)]
    started = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    sampler = Sampler(process.pid)
    sampler.start()
    out = process.stdout.read() if process.stdout else ""
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    sampler.stopped.set()
    sampler.join()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(command)} failed")
    result = json.loads([x for x in out.splitlines() if x.startswith("RESULT ")][-1][7:])
    # The case process exactly (wait4); every other process as last sampled.
    own = usage.ru_utime + usage.ru_stime
    others = sum(cpu for pid, cpu in sampler.cpu.items() if pid != process.pid)
    return {
        "case": case,
        "result": result,
        "wall": wall,
        "cpu": own + others,
        "tree": dict(sampler.tree),
        # The kernel's high-water mark of the case process: catches a peak shorter than a sample.
        "main_maxrss": usage.ru_maxrss / 1024,
        "tree_pss_at": sampler.tree_pss_at,
        "per_process": {name: dict(peak) for name, peak in sampler.peak.items()},
        "main_rss_series": sampler.main_rss_series,
    }


def measure(args: argparse.Namespace) -> None:
    ensure_corpus()
    print(f"load average {os.getloadavg()}", flush=True)
    runs = []
    for round_ in range(args.rounds):
        for case in args.cases:
            run = measure_one(case)
            run["round"] = round_
            runs.append(run)
            print(
                f"{case}: {run['result']['chunks']} chunks, case {run['result']['seconds']:.1f} s, "
                f"command {run['wall']:.1f} s, CPU {run['cpu']:.1f} s, "
                f"tree peak RSS {run['tree']['rss']:.0f} MB, PSS {run['tree']['pss']:.0f} MB "
                f"(at {run['tree_pss_at']:.1f} s); main's high-water RSS {run['main_maxrss']:.0f} MB",
                flush=True,
            )
            for name, peak in sorted(run["per_process"].items()):
                print(
                    f"    {name}: peak RSS {peak['rss']:.0f}, PSS {peak['pss']:.0f} "
                    f"(anon {peak['pss_anon']:.0f}, file {peak['pss_file']:.0f}), "
                    f"USS {peak['uss']:.0f} MB",
                    flush=True,
                )
            if not args.keep:
                shutil.rmtree(store_of(case).parent, ignore_errors=True)
    print(f"load average {os.getloadavg()}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(runs, indent=1))


# --- trace -----------------------------------------------------------------


def owner(traceback: tracemalloc.Traceback) -> str:
    """Who made an allocation: the innermost frame that says, walking out from the allocation."""
    frames = list(reversed(traceback))  # most recent first
    if any("importlib._bootstrap" in frame.filename for frame in frames):
        return "imports (module code, classes, schemas)"
    for frame in frames:
        path = frame.filename
        if "/qdrant_client/local/" in path:
            text = linecache.getline(path, frame.lineno).strip()[:70]
            return f"qdrant local {Path(path).name}:{frame.lineno} `{text}`"
        if "/ragflow_config/" in path:
            return f"ours {path.split('/ragflow_config/')[1]}:{frame.lineno}"
        if "/qdrant_client/" in path:
            return f"qdrant client {path.split('/qdrant_client/')[1]}"
    innermost = frames[0].filename if frames else "?"
    for package in ("pydantic", "numpy", "asyncio", "multiprocessing", "concurrent", "sqlite3"):
        if f"/{package}/" in innermost:
            return f"other: {package}"
    return f"other: {Path(innermost).name}"


def grouped(snapshot: tracemalloc.Snapshot, top: int = 25) -> list[dict[str, Any]]:
    groups: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for stat in snapshot.statistics("traceback"):
        group = groups[owner(stat.traceback)]
        group[0] += stat.size
        group[1] += stat.count
    rows = sorted(groups.items(), key=lambda item: -item[1][0])
    return [{"owner": k, "mb": v[0] / MB, "blocks": v[1]} for k, v in rows[:top]]


def describe(collections: dict[str, Any]) -> dict[str, Any]:
    """The fullest collection's points: count, vectors array, payloads' JSON text and keys."""
    name, collection = max(
        ((n, c) for n, c in collections.items() if c), key=lambda item: len(item[1].payload)
    )
    vectors = next(iter(collection.vectors.values()))
    return {
        "collection": name,
        "points": len(collection.payload),
        "vectors": {"shape": list(vectors.shape), "mb": round(vectors.nbytes / MB, 1)},
        "payload_json_mb": round(sum(len(json.dumps(p)) for p in collection.payload) / MB, 1),
        "payload_keys": sorted(collection.payload[0]) if collection.payload else [],
    }


def rss_pss() -> tuple[float, float]:
    memory = rollup()
    return memory["rss"], memory["pss"]


def trace(args: argparse.Namespace) -> None:
    tracemalloc.start(args.frames)
    ensure_corpus()
    store = store_of(args.case + "-trace")
    shutil.rmtree(store.parent, ignore_errors=True)
    sys.argv = ["cases.py", *case_arguments(args.case, store)]
    import cases
    import numpy
    from qdrant_client.local import async_qdrant_local, local_collection

    seen: dict[str, Any] = {"doublings": []}
    resize = numpy.resize

    def resize_and_note(array: Any, shape: Any) -> Any:
        # The doubling: both arrays are alive until the caller rebinds the collection's.
        new = resize(array, shape)
        seen["doublings"].append(
            {
                "rows": f"{array.shape[0]} -> {new.shape[0]}",
                "traced_mb": tracemalloc.get_traced_memory()[0] / MB,
                "rss_mb": rss_pss()[0],
            }
        )
        return new

    local_collection.np.resize = resize_and_note  # type: ignore[attr-defined]
    close = async_qdrant_local.AsyncQdrantLocal.close

    async def close_after_snapshot(self: Any, **kwargs: Any) -> None:
        # The run may open and close the folder more than once: keep the fullest moment.
        points = max((len(c.payload) for c in self.collections.values() if c), default=0)
        if points > seen.get("points", 0):
            gc.collect()
            seen["at_close_rss_pss"] = rss_pss()
            seen["at_close_traced"] = tracemalloc.get_traced_memory()
            seen.update(describe(self.collections))
            seen["snapshot"] = tracemalloc.take_snapshot()
        await close(self, **kwargs)

    async_qdrant_local.AsyncQdrantLocal.close = close_after_snapshot  # type: ignore[method-assign]
    cases.main()
    report_trace(seen, f"trace {args.case}")
    shutil.rmtree(store.parent, ignore_errors=True)


def report_trace(seen: dict[str, Any], title: str) -> None:
    print(f"== {title}")
    current = (seen.get("at_close_traced") or tracemalloc.get_traced_memory())[0]
    peak = tracemalloc.get_traced_memory()[1]  # over the whole run
    if "at_close_rss_pss" in seen:
        rss, pss = seen["at_close_rss_pss"]
        print(f"at close: RSS {rss:.0f} MB, PSS {pss:.0f} MB, traced {current / MB:.0f} MB")
    print(f"traced peak over the run {peak / MB:.0f} MB")
    for key in ("collection", "points", "vectors", "payload_json_mb", "payload_keys"):
        if key in seen:
            print(f"{key}: {seen[key]}")
    for doubling in seen.get("doublings", []):
        print(
            f"vectors doubled {doubling['rows']}: traced {doubling['traced_mb']:.0f} MB, "
            f"RSS {doubling['rss_mb']:.0f} MB"
        )
    if "snapshot" in seen:
        for row in grouped(seen["snapshot"]):
            print(f"  {row['mb']:8.1f} MB {row['blocks']:>9} blocks  {row['owner']}")
    sys.stdout.flush()


# --- load ------------------------------------------------------------------


def load(args: argparse.Namespace) -> None:
    before = rss_pss()
    import qdrant_client

    imported = rss_pss()
    gc.collect()
    if args.trace:
        tracemalloc.start(args.frames)
    started = time.process_time()
    client = qdrant_client.QdrantClient(path=str(args.store))
    seconds = time.process_time() - started
    gc.collect()
    opened = rss_pss()
    print(f"== load {args.store}{' (traced)' if args.trace else ''}")
    print(f"RSS/PSS MB: start {before[0]:.0f}/{before[1]:.0f}, after import {imported[0]:.0f}/")
    print(f"  {imported[1]:.0f}, after open {opened[0]:.0f}/{opened[1]:.0f} ({seconds:.1f} CPU-s)")
    for key, value in describe(client._client.collections).items():  # the local mode's points
        print(f"{key}: {value}")
    if args.trace:
        current, peak = tracemalloc.get_traced_memory()
        print(f"traced by the open: {current / MB:.0f} MB live, {peak / MB:.0f} MB at its peak")
        for row in grouped(tracemalloc.take_snapshot(), 12):
            print(f"  {row['mb']:8.1f} MB {row['blocks']:>9} blocks  {row['owner']}")
    else:
        # What the allocator keeps of the loader's freed temporaries (lists of floats, rows).
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        trimmed = rss_pss()
        print(f"after malloc_trim: RSS/PSS {trimmed[0]:.0f}/{trimmed[1]:.0f} MB")
    client.close()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("measure")
    one.add_argument("--cases", nargs="+", choices=sorted(CASES), default=list(CASES))
    one.add_argument("--rounds", type=int, default=1)
    one.add_argument("--keep", action="store_true", help="leave the stores for `load`")
    one.add_argument("--json", type=Path)
    one.set_defaults(run=measure)
    two = commands.add_parser("trace")
    two.add_argument("case", choices=sorted(CASES))
    two.add_argument("--frames", type=int, default=FRAMES)
    two.set_defaults(run=trace)
    three = commands.add_parser("load")
    three.add_argument("store", type=Path)
    three.add_argument("--trace", action="store_true", help="tracemalloc the open (slow)")
    three.add_argument("--frames", type=int, default=FRAMES)
    three.set_defaults(run=load)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
