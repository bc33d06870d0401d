"""Where a parser process's memory goes (issue 40, item 2).

    python bench/parser_process_memory.py tree      [--files 2000]
    python bench/parser_process_memory.py simulate  [--files 2000]

``tree``: runs ``cases.py ours`` (2 parser processes, hashing model, a fresh
Qdrant local folder on /dev/shm) and reads every descendant's
``/proc/PID/smaps_rollup`` every 50 ms: private dirty, PSS and shared pages
when first seen (just forked) and at the end, and the peak of private dirty.
A worker's pages shared with the fork server that it writes to (reference
counts: copy on write) move from shared to private; memory it allocates is
private from the start.

``simulate``: what one worker does for its half of the corpus (every other
file, 8 files a task: parse, chunk, hash-embed, through the executor's own
``_prepare_many``), in this one process under ``tracemalloc``: private
dirty as it goes, and the live Python allocations by file at the end.
"""

from __future__ import annotations

import argparse
import collections
import shutil
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from _processes import role, rollup  # noqa: E402
from cases import CHUNK_SIZE, OVERLAP  # noqa: E402
from make_corpus import make_corpus  # noqa: E402


def tree(corpus: Path) -> None:
    store = Path("/dev/shm/ragflow-parser-memory/qdrant")
    shutil.rmtree(store.parent, ignore_errors=True)
    command = [sys.executable, str(HERE / "cases.py"), "ours", "--corpus", str(corpus)]
    process = subprocess.Popen(
        [*command, "--store", str(store), "--model", "hashing"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    first: dict[str, dict[str, float]] = {}
    last: dict[str, dict[str, float]] = {}
    peak: dict[str, float] = collections.defaultdict(float)
    roles: dict[int, str] = {}
    parent = psutil.Process(process.pid)
    while process.poll() is None:
        try:
            children = parent.children(recursive=True)
        except psutil.NoSuchProcess:
            break
        for child in children:
            try:
                name = role(child, parent.pid, roles)
                now = rollup(child.pid)
            except (OSError, psutil.NoSuchProcess):
                continue
            first.setdefault(name, now)
            last[name] = now
            peak[name] = max(peak[name], now["uss"])
        time.sleep(0.05)
    shutil.rmtree(store.parent, ignore_errors=True)
    print(
        "| process | first seen: private / PSS / shared MB "
        "| at the end: private / PSS / shared MB | peak private MB |"
    )
    print("| --- | --- | --- | ---: |")

    def cell(memory: dict[str, float]) -> str:
        return f"{memory['uss']:.0f} / {memory['pss']:.0f} / {memory['rss'] - memory['uss']:.0f}"

    for name in first:
        print(f"| {name} | {cell(first[name])} | {cell(last[name])} | {peak[name]:.0f} |")


def simulate(corpus: Path) -> None:
    import docx  # noqa: F401  (the fork server imports the parsers' libraries first)
    import openpyxl  # noqa: F401
    import pptx  # noqa: F401

    from ragflow_config.embedding import HashingEmbeddingModel
    from ragflow_config.executors.local import _prepare_many
    from ragflow_config.rag import (
        ApproxTokenChunker,
        ExcelParser,
        PPTParser,
        TextParser,
        WordParser,
    )

    text = TextParser()
    parsers = {".md": text, ".txt": text, ".docx": WordParser(), ".xlsx": ExcelParser()}
    parsers[".pptx"] = PPTParser()
    chunker = ApproxTokenChunker(
        ApproxTokenChunker.Parameters(chunk_size=CHUNK_SIZE, overlap=OVERLAP)
    )
    model = HashingEmbeddingModel()
    files = sorted(path for path in corpus.rglob("*") if path.suffix in parsers)[::2]
    print(f"{len(files)} files; private before: {rollup()['uss']:.0f} MB")
    tracemalloc.start()
    for start in range(0, len(files), 8):
        requests = [
            (parsers[path.suffix], chunker, model, path.read_bytes(), path.name)
            for path in files[start : start + 8]
        ]
        _prepare_many(requests, 300)
        if start % 200 == 0:
            traced = tracemalloc.get_traced_memory()[0] / 2**20
            print(
                f"after {start + len(requests)} files: private {rollup()['uss']:.0f} MB, "
                f"traced live {traced:.1f} MB"
            )
    current, highest = (value / 2**20 for value in tracemalloc.get_traced_memory())
    print(f"at the end: traced live {current:.1f} MB, traced peak {highest:.1f} MB")
    print(f"private (tracemalloc's own included): {rollup()['uss']:.0f} MB")
    print("live allocations by file:")
    for stat in tracemalloc.take_snapshot().statistics("filename")[:6]:
        print(f"  {stat.traceback[0].filename}: {stat.size / 2**20:.1f} MB in {stat.count} blocks")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("mode", choices=["tree", "simulate"])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--corpora", type=Path, default=Path("/tmp/ragflow-bench"))
    args = parser.parse_args()
    corpus = args.corpora / f"corpus-{args.files}"
    make_corpus(corpus, args.files)
    tree(corpus) if args.mode == "tree" else simulate(corpus)


if __name__ == "__main__":
    main()
