"""Issue 25: the Ray executor's cost on one node, as ratios of the local executor's.

    python bench/ray_executor.py                 # 2,000 files, 3 repetitions (about 5 min on 2 cores)
    python bench/ray_executor.py --files 200 --reps 1

Each case is `ragflow-config run` of the same pipeline into a fresh Qdrant
store on tmpfs, in a fresh process, once with `execution: {type: local}` and
once with `{type: ray}` (which starts a Ray for the run on this machine, as a
user without a cluster would). Wall time is the command's, start-up and
imports included; peak memory is the summed RSS and PSS of its process tree,
sampled as bench/run.py does (Ray's GCS, raylet and workers are in the tree);
CPU seconds are the tree's user + system. Within each repetition the two run
back to back, in rotating order, and the table gives the median ratio with
its range.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from make_corpus import make_corpus
from run import MB, _PeakSampler

HERE = Path(__file__).resolve().parent
RAGFLOW = Path(sys.executable).parent / "ragflow-config"
PIPELINE = """\
version: 1
vector_stores:
  local: {{type: qdrant, parameters: {{path: {store}}}}}
embeddings:
  model: {{type: hashing}}
knowledge_bases:
  - name: bench
    sources: [{{path: {corpus}, allow_outside: true}}]
    parsers: [{{type: text}}, {{type: docx}}, {{type: excel}}, {{type: pptx}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 256, overlap: 32}}}}
    embedding: model
    vector_store: local
    collection: bench
execution: {{type: {executor}}}
"""
CASES = ("local", "ray")


def run_case(executor: str, corpus: Path, stores: Path) -> dict[str, float]:
    folder = stores / executor
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    pipeline = folder / "pipeline.yaml"
    pipeline.write_text(
        PIPELINE.format(store=folder / "store", corpus=corpus, executor=executor), encoding="utf-8"
    )
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            [str(RAGFLOW), "run", str(pipeline), "--json"], stdout=out, stderr=err, text=True
        )
        sampler = _PeakSampler(process.pid)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        sampler.stopped.set()
        sampler.join()
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{executor} failed:\n{err.read()[-3000:]}")
        [kb] = json.loads(out.read())["knowledge_bases"]
    return {
        "seconds": seconds,
        "peak_rss_mb": sampler.peak / MB,
        "peak_pss_mb": sampler.peak_pss / MB,
        # The command exactly, and the descendants it does not wait for as last sampled.
        "cpu_seconds": usage.ru_utime + usage.ru_stime + sum(sampler.descendants_cpu.values()),
        "chunks": kb["chunks_written"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--corpora", type=Path, default=Path("/tmp/ragflow-bench"))
    parser.add_argument("--stores", type=Path, default=Path("/dev/shm/ragflow-bench-ray"))
    args = parser.parse_args()
    corpus = args.corpora / f"corpus-{args.files}-x1"
    counts = make_corpus(corpus, args.files)
    load = os.getloadavg()
    runs: dict[str, list[dict[str, float]]] = {case: [] for case in CASES}
    for rep in range(args.reps):
        order = CASES if rep % 2 == 0 else CASES[::-1]
        for case in order:
            runs[case].append(run_case(case, corpus, args.stores))
            print(case, runs[case][-1], file=sys.stderr)
    shutil.rmtree(args.stores, ignore_errors=True)
    assert {run["chunks"] for case in CASES for run in runs[case]} == {runs["local"][0]["chunks"]}

    print(
        f"{args.files} files ({', '.join(f'{n} {k}' for k, n in counts.items())}), "
        f"{args.reps} repetition(s), {os.cpu_count()} cores, load average at start {load[0]:.1f}; "
        "ratios are ray / local within a repetition: median (min-max).\n"
    )
    print("| measure | local (median) | ray (median) | ray / local |")
    print("|---|---|---|---|")
    for measure, unit in (
        ("seconds", "s"),
        ("cpu_seconds", "s"),
        ("peak_rss_mb", "MB"),
        ("peak_pss_mb", "MB"),
    ):
        local = [run[measure] for run in runs["local"]]
        ray = [run[measure] for run in runs["ray"]]
        ratios = sorted(r / b for r, b in zip(ray, local, strict=True))
        median = ratios[len(ratios) // 2]
        print(
            f"| {measure} | {sorted(local)[len(local) // 2]:.1f} {unit} | "
            f"{sorted(ray)[len(ray) // 2]:.1f} {unit} | "
            f"{median:.2f}x ({ratios[0]:.2f}-{ratios[-1]:.2f}) |"
        )


if __name__ == "__main__":
    main()
