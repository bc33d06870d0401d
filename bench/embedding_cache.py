"""Issue 26 item 1 (optional part): a re-index after `reset` with `embedding_cache:` against without.

    python bench/embedding_cache.py                    # 200 files, minilm and hashing (~4 min)
    python bench/embedding_cache.py --files 600 --model minilm

For each model, on one corpus (``make_corpus.py``; approx_token 256/32, Qdrant
local, as the other benchmarks): without a cache, a full run, `reset`, and the
same full run again; with a cache (a fresh folder), a full run that fills it,
`reset`, and a run that finds every text in it. Every run is ``ragflow-config
run`` in its own process, timed as ``chunk_reuse.py`` times them: wall seconds
and CPU seconds of that process and its children (the parser processes).
Ratios are against the run without a cache in the same invocation. Results
print as a Markdown table.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

from cases import COLLECTION, OVERLAP, PIPELINE, STORE_BLOCKS, SUFFIXES
from chunk_reuse import timed_run
from make_corpus import make_corpus


def write_pipeline(folder: Path, corpus: Path, model: str, cache: bool) -> Path:
    path = folder / "pipeline.yaml"
    text = PIPELINE.format(
        store_block=STORE_BLOCKS["qdrant"].format(store=folder / "store"),
        model=model,
        corpus=corpus,
        include=", ".join(f'"**/*{suffix}"' for suffix in SUFFIXES),
        chunk_size=256,
        overlap=OVERLAP,
        collection=COLLECTION,
    )
    path.write_text(text + ("embedding_cache: {path: cache}\n" if cache else ""))
    return path


def reset(pipeline: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "ragflow_config.cli", "reset", str(pipeline), "bench", "--yes"],
        check=True,
        stdout=subprocess.DEVNULL,
    )


def measure(source: Path, work: Path, model: str, cache: bool) -> dict:
    folder = work / f"{model}-{'cache' if cache else 'plain'}"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    pipeline = write_pipeline(folder, source, model, cache)
    full = timed_run(pipeline)
    reset(pipeline)
    again = timed_run(pipeline)
    entries = list((folder / "cache").glob("*.npy"))
    return {
        "model": model,
        "cache": cache,
        "full": full,
        "again": again,
        "entries": len(entries),
        "cache_bytes": sum(path.stat().st_size for path in entries),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=200)
    parser.add_argument("--model", choices=["hashing", "minilm"], action="append")
    parser.add_argument("--corpora", type=Path, default=Path("/tmp/ragflow-bench"))
    parser.add_argument("--work", type=Path, default=Path("/dev/shm/ragflow-embedding-cache"))
    args = parser.parse_args()
    source = args.corpora / f"corpus-{args.files}"
    make_corpus(source, args.files)
    rows = [
        measure(source, args.work, model, cache)
        for model in args.model or ["minilm", "hashing"]
        for cache in (False, True)
    ]
    shutil.rmtree(args.work, ignore_errors=True)

    print(f"\n{args.files} files, `reset` then the same run again\n")
    print(
        "| model | cache | full run wall / CPU s | after reset wall / CPU s "
        "| full / no cache's full, wall / CPU | after reset / no cache's full, wall / CPU "
        "| entries | cache MB |"
    )
    print("| --- " * 8 + "|")
    for plain, cached in zip(rows[::2], rows[1::2], strict=True):
        base_wall, base_cpu = plain["full"]
        for row in (plain, cached):
            (fw, fc), (aw, ac) = row["full"], row["again"]
            size = (
                (str(row["entries"]), f"{row['cache_bytes'] / 2**20:.1f}")
                if row["cache"]
                else ("-", "-")
            )
            print(
                f"| {row['model']} | {'on' if row['cache'] else 'off'} "
                f"| {fw:.1f} / {fc:.1f} | {aw:.1f} / {ac:.1f} "
                f"| {fw / base_wall:.2f} / {fc / base_cpu:.2f} "
                f"| {aw / base_wall:.3f} / {ac / base_cpu:.3f} | {size[0]} | {size[1]} |"
            )


if __name__ == "__main__":
    main()
