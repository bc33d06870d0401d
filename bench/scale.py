"""The embedded stores as the corpus grows: what a run, a re-run and a search cost on each.

    python bench/scale.py --files 2000 10000 --stores qdrant_edge qdrant milvus_lite \
        [--work /tmp/ragflow-scale] [--queries 200] [--kill]

For each corpus size (``bench/make_corpus.py --files N``, text and Markdown only,
about 9 chunks a file) and each store, one pipeline file (hashing model, 384
dimensions, approx_token 256/32, ``retrieval: {mode: hybrid}``) is run through
the real command line, and reported:

* the full run, an unchanged re-run and a re-run after 1 % of the files were
  edited: wall seconds, CPU seconds of the whole tree (``wait4``: the command
  and every process it waited for) and the tree's peak PSS (every process's
  ``smaps_rollup``, sampled every 100 ms);
* the store's size on disk;
* warm searches in one process (``KnowledgeBase.search``, dense and hybrid,
  ``--queries`` phrases from the corpus): CPU per query, p50 and p99 wall;
* recall@10 of the dense search against exact search: the truth is Qdrant
  Edge's exact (brute-force) search on the same vectors, so it needs
  ``qdrant_edge`` among ``--stores``; records are compared by
  ``(document_id, chunk_index)``, the same on every store;
* a cold ``ragflow-config search`` from the command line, start-up included;
* with ``--kill``: a first run on a fresh store killed with SIGKILL halfway,
  then a run and ``verify``: what the kill left, by their exit codes.

Figures land in ``bench/results/scale-<stores>.json`` and as a Markdown table on
stdout. The machine is shared: read CPU seconds, and ratios within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _processes import rollup
from cases import _queries

ROOT = Path(__file__).resolve().parent.parent
Hit = tuple[str, int, float]  # document_id, chunk_index, score
CLI = [sys.executable, "-m", "ragflow_config.cli"]

STORE_BLOCKS = {
    "qdrant_edge": "    type: qdrant_edge\n    parameters: {{path: {store}}}",
    "qdrant": "    type: qdrant\n    parameters: {{path: {store}}}",
    "milvus_lite": "    type: milvus_lite\n    parameters: {{uri: {store}/milvus.db}}",
}

PIPELINE = """\
version: 1
vector_stores:
  local:
{store_block}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: 384}}}}
knowledge_bases:
  - name: bench
    description: The benchmark corpus.
    sources:
      - path: {corpus}
        include: ["**/*.md", "**/*.txt"]
        allow_outside: true
    parsers: [{{type: text}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 256, overlap: 32}}}}
    embedding: model
    vector_store: local
    collection: bench
    retrieval: {{mode: hybrid}}
    max_delete_fraction: 1.0
"""


def corpus(work: Path, files: int) -> Path:
    folder = work / f"corpus-{files}"
    subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "make_corpus.py"),
            str(folder),
            "--files",
            str(files),
        ],
        check=True,
    )
    return folder


def pipeline(work: Path, store: str, files: int, documents: Path, label: str = "") -> Path:
    folder = work / f"{store}-{files}{label}"
    folder.mkdir(parents=True, exist_ok=True)
    block = STORE_BLOCKS[store].format(store=folder / "store")
    path = folder / "pipeline.yaml"
    path.write_text(PIPELINE.format(store_block=block, corpus=documents))
    return path


def measured(argv: list[str], kill_after: float | None = None) -> dict[str, Any]:
    """Run ``argv``; its wall and tree CPU seconds, the tree's peak PSS and exit code.

    Its stderr goes to a file, not a pipe: a run prints a line a file (a full pipe would
    stop it), and a killed run's orphaned parser processes would hold a pipe open."""
    with tempfile.TemporaryFile() as log:
        started = time.perf_counter()
        process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=log)
        peak = _PeakPss(process.pid)
        killer = threading.Timer(kill_after or 0, os.kill, (process.pid, signal.SIGKILL))
        if kill_after is not None:
            killer.start()
        _, status, usage = os.wait4(process.pid, 0)  # reaped here, with its tree's rusage
        killer.cancel()
        wall = time.perf_counter() - started
        peak.stop()
        log.seek(0)
        stderr = log.read().decode(errors="replace")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "peak_pss_mb": round(peak.mb),
        "peak_pss_anon_mb": round(peak.anon_mb),
        "exit": os.waitstatus_to_exitcode(status),
        "stderr_tail": stderr.strip().splitlines()[-3:],
    }


class _PeakPss:
    """The highest PSS of a process tree, its ``smaps_rollup`` summed every 100 ms, and
    the highest of its anonymous part: the rest is Qdrant Edge's mapped files in the page
    cache, which the kernel can take back under pressure."""

    def __init__(self, pid: int) -> None:
        self.mb = self.anon_mb = 0.0
        self._root = psutil.Process(pid)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(0.1):
            try:
                members = [self._root, *self._root.children(recursive=True)]
            except psutil.Error:
                return
            total = anon = 0.0
            for member in members:
                try:
                    memory = rollup(member.pid)
                except (OSError, psutil.Error):
                    continue
                total += memory["pss"]
                anon += memory["pss_anon"]
            self.mb = max(self.mb, total)
            self.anon_mb = max(self.anon_mb, anon)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def edit(documents: Path, share: float, round_: int) -> dict[Path, str]:
    """Append a line to ``share`` of the corpus's files (a fixed choice per round); their
    texts before."""
    files = sorted(p for p in documents.rglob("*") if p.is_file() and p.suffix in (".md", ".txt"))
    chosen = random.Random(round_).sample(files, max(1, int(len(files) * share)))
    originals = {path: path.read_text(encoding="utf-8") for path in chosen}
    for path in chosen:
        with path.open("a", encoding="utf-8") as file:
            file.write(f"\n\nEdited in round {round_} of the scale benchmark.\n")
    return originals


def disk_mb(folder: Path) -> float:
    """What the files take on disk (allocated blocks: Qdrant Edge's write-ahead log is
    made of sparse 32 MB files)."""
    blocks = sum(p.stat().st_blocks for p in folder.rglob("*") if p.is_file())
    return round(blocks * 512 / 2**20, 1)


async def searches(path: Path, queries: list[str], truth_store: bool) -> dict[str, Any]:
    """Warm searches in this process: dense and hybrid CPU per query and wall p50/p99, and
    (on Qdrant Edge) each dense query's exact top 10, the truth for recall."""
    from ragflow_config.pipeline import Pipeline
    from ragflow_config.rag import KnowledgeBase, RetrievalSettings

    results: dict[str, Any] = {}
    async with Pipeline.load(path).build() as built:
        base = built.knowledge_base("bench")
        for mode in ("dense", "hybrid"):
            kb = KnowledgeBase(
                name=base.name,
                description=base.description,
                embedding_model=base.embedding_model,
                vector_store=base.vector_store,
                collection=base.collection,
                retrieval=base.retrieval.model_copy(
                    update=dict(RetrievalSettings.model_validate({"mode": mode}))
                ),
            )
            await kb.search([queries[0]], top_k=10)  # warm: the collection opened
            walls = []
            hits: list[list[Hit]] = []
            cpu = time.process_time()
            for query in queries:
                began = time.perf_counter()
                found = await kb.search([query], top_k=10)
                walls.append(time.perf_counter() - began)
                hits.append([(d.document_id, d.chunk.chunk_index, d.score) for d in found])
            cpu = time.process_time() - cpu
            walls.sort()
            results[mode] = {
                "cpu_ms_per_query": round(1000 * cpu / len(queries), 2),
                "p50_ms": round(1000 * statistics.median(walls), 2),
                "p99_ms": round(1000 * walls[int(0.99 * (len(walls) - 1))], 2),
            }
            if mode == "dense":
                results["dense_hits"] = hits
                if truth_store:
                    results["exact_hits"] = await _exact(kb, queries)
    return results


async def _exact(kb: Any, queries: list[str]) -> list[list[Hit]]:
    """Qdrant Edge's exact search (every vector compared) for each query."""
    store = kb.vector_store
    edge = store._edge
    shard = await store._shard(await kb.live_collection())
    vectors = (await kb.embedding_model(list(queries))).embeddings
    selector = edge.PayloadSelector.Include(["document_id", "chunk.chunk_index"])
    truth = []
    for vector in vectors:
        request = edge.QueryRequest(
            limit=10,
            query=edge.Query.Nearest(list(vector)),
            with_payload=selector,
            params=edge.SearchParams(exact=True),
        )
        points = shard.query(request)
        truth.append(
            [(p.payload["document_id"], p.payload["chunk"]["chunk_index"], p.score) for p in points]
        )
    return truth


def recall(found: list[list[Hit]], truth: list[list[Hit]]) -> float:
    """The share of the exact top 10 that a search found. A hit whose score ties the
    exact 10th counts as found: the corpus repeats paragraphs, so many chunks have the
    same vector, and which of the tied ones make the 10 is arbitrary."""
    hits = 0
    for got, exact in zip(found, truth, strict=True):
        keys = {(document_id, index) for document_id, index, _ in exact}
        tenth = exact[-1][2] if exact else float("inf")
        hits += min(
            len(exact),
            sum((d, i) in keys or score >= tenth - 1e-5 for d, i, score in got[: len(exact)]),
        )
    return round(hits / max(1, sum(len(exact) for exact in truth)), 4)


def one(args: argparse.Namespace, store: str, files: int, documents: Path) -> dict[str, Any]:
    path = pipeline(args.work, store, files, documents)
    row: dict[str, Any] = {"store": store, "files": files}
    row["full"] = full = measured([*CLI, "run", str(path)])
    row["unchanged"] = measured([*CLI, "run", str(path)])
    # 1 % of the files edited, then put back (another 1 % edit): every store is searched
    # on the same texts, so the truth of one is the truth of all.
    originals = edit(documents, 0.01, 1)
    row["edit_1pct"] = {"files": len(originals), **measured([*CLI, "run", str(path)])}
    for original, text in originals.items():
        original.write_text(text, encoding="utf-8")
    row["edit_back"] = measured([*CLI, "run", str(path)])
    row["disk_mb"] = disk_mb(path.parent / "store")
    queries = _queries(documents, args.queries)
    row["search"] = asyncio.run(searches(path, queries, store == "qdrant_edge"))
    row["cli_search"] = measured([*CLI, "search", str(path), "bench", queries[0]])
    if args.kill:
        row["sigkill"] = kill_test(args, store, files, documents, full["wall"])
    return row


def kill_test(
    args: argparse.Namespace, store: str, files: int, documents: Path, wall: float
) -> dict[str, Any]:
    """A first run killed halfway, then a run and `verify`: exit codes tell what was left."""
    path = pipeline(args.work, store, files, documents, "-killed")
    killed = measured([*CLI, "run", str(path)], kill_after=wall / 2)
    again = measured([*CLI, "run", str(path)])
    verify = measured([*CLI, "verify", str(path)])
    return {
        "killed_exit": killed["exit"],
        "rerun_exit": again["exit"],
        "verify_exit": verify["exit"],
    }


def table(rows: list[dict[str, Any]]) -> str:
    lines = [
        "| store | files | full run CPU / wall / peak PSS | unchanged | 1 % edit (CPU, x full) "
        "| disk | dense CPU/query, p50, p99 | hybrid CPU/query, p50, p99 | recall@10 | cold CLI search |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        full, unchanged, edited = row["full"], row["unchanged"], row["edit_1pct"]
        dense, hybrid = row["search"]["dense"], row["search"]["hybrid"]
        lines.append(
            f"| {row['store']} | {row['files']} | {full['cpu']:.1f} s / {full['wall']:.1f} s / "
            f"{full['peak_pss_mb']} MB | {unchanged['cpu']:.1f} s | {edited['cpu']:.1f} s "
            f"({edited['cpu'] / full['cpu']:.3f}x) | {row['disk_mb']} MB | "
            f"{dense['cpu_ms_per_query']} ms, {dense['p50_ms']}, {dense['p99_ms']} | "
            f"{hybrid['cpu_ms_per_query']} ms, {hybrid['p50_ms']}, {hybrid['p99_ms']} | "
            f"{row.get('recall_at_10', '')} | {row['cli_search']['wall']:.2f} s wall, "
            f"{row['cli_search']['cpu']:.2f} s CPU |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--files", type=int, nargs="+", default=[2000])
    parser.add_argument("--stores", nargs="+", default=["qdrant_edge", "qdrant"])
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragflow-scale"))
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--kill", action="store_true", help="also SIGKILL a first run halfway")
    args = parser.parse_args()
    args.work.mkdir(parents=True, exist_ok=True)
    rows = []
    for files in args.files:
        truth = None
        for store in sorted(args.stores, key=lambda s: s != "qdrant_edge"):  # the truth first
            documents = corpus(args.work, files)
            row = one(args, store, files, documents)
            search = row["search"]
            if "exact_hits" in search:
                truth = search.pop("exact_hits")
            if truth is not None:
                row["recall_at_10"] = recall(search["dense_hits"], truth)
            search.pop("dense_hits")
            rows.append(row)
            print(json.dumps(row), flush=True)
    print(table(rows))
    sizes = "-".join(str(files) for files in args.files)
    out = ROOT / "bench" / "results" / f"scale-{sizes}-{'-'.join(args.stores)}.json"
    out.write_text(json.dumps({"load": os.getloadavg(), "rows": rows}, indent=1))
    print(
        f"wrote {out}; peak RSS of this process {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB"
    )


if __name__ == "__main__":
    main()
