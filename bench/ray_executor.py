"""Issue 25: the Ray executor's cost on one node, as ratios of the local executor's.

    python bench/ray_executor.py                 # 2,000 files, 3 repetitions (about 5 min on 2 cores)
    python bench/ray_executor.py --files 200 --reps 1
    python bench/ray_executor.py --nodes 1 2         # `ray start` clusters of 1 and 2 nodes
    python bench/ray_executor.py --model minilm --files 100 [--baseline REV]

Each case is `ragflow-config run` of the same pipeline into a fresh Qdrant
store on tmpfs, in a fresh process, once with `execution: {type: local}` and
once with `{type: ray}` (which starts a Ray for the run on this machine, as a
user without a cluster would). Wall time is the command's, start-up and
imports included; peak memory is the summed RSS and PSS of its process tree,
sampled as bench/run.py does (Ray's GCS, raylet and workers are in the tree);
CPU seconds are the tree's user + system. Within each repetition the two run
back to back, in rotating order, and the table gives the median ratio with
its range.

With ``--nodes``, the Ray cases run instead on a cluster started before the
case with `ray start --head --num-cpus 1` plus N-1 `ray start --address ...
--num-cpus 1` worker node processes on this machine (a cluster in use, as
`address:` joins one): its start is not counted, but the CPU its daemons and
workers spend during the run is (their user + system seconds before and
after). The table then gives files per CPU-second, and the ratio to the
local executor with its default workers (one per core).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil
from make_corpus import make_corpus
from run import MB, _PeakSampler

HERE = Path(__file__).resolve().parent
RAGFLOW = Path(sys.executable).parent / "ragflow-config"
PIPELINE = """\
version: 1
vector_stores:
  local: {{type: qdrant, parameters: {{path: {store}}}}}
embeddings:
  model: {{type: {model}}}
knowledge_bases:
  - name: bench
    sources: [{{path: {corpus}, allow_outside: true}}]
    parsers: [{{type: text}}, {{type: docx}}, {{type: excel}}, {{type: pptx}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 256, overlap: 32}}}}
    embedding: model
    vector_store: local
    collection: bench
execution: {execution}
"""
CASES = ("local", "ray")


class Cluster:
    """`ray start` daemons of ``nodes`` one-CPU nodes on this machine, under a temp dir of their own.

    Its processes are found by that dir in their command lines (and their
    children), and ended by process id: `ray stop` would end every Ray here.
    """

    def __init__(self, nodes: int, temp: Path) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.address = f"127.0.0.1:{port}"
        self.temp = temp
        ray = str(Path(sys.executable).parent / "ray")
        head = ["--head", "--include-dashboard=false", f"--port={port}", f"--temp-dir={temp}"]
        for node in range(nodes):
            options = head if node == 0 else [f"--address={self.address}"]
            options = [*options, "--node-ip-address=127.0.0.1"]
            subprocess.run(
                [ray, "start", "--num-cpus=1", "--disable-usage-stats", *options],
                stdout=subprocess.DEVNULL,
                check=True,
                # As a `ray.init` one: a token-authenticated cluster would need a token here.
                env={**os.environ, "RAY_AUTH_MODE": "disabled"},
            )

    def processes(self) -> list[psutil.Process]:
        roots = []
        for process in psutil.process_iter(["cmdline"]):
            if str(self.temp) in " ".join(process.info["cmdline"] or ()):
                roots.append(process)
        found = {process.pid: process for process in roots}
        for root in roots:
            with contextlib.suppress(psutil.NoSuchProcess):
                found.update((child.pid, child) for child in root.children(recursive=True))
        return list(found.values())

    def cpu_seconds(self) -> dict[int, float]:
        """User + system seconds of each of the cluster's processes now."""
        seconds = {}
        for process in self.processes():
            with contextlib.suppress(psutil.NoSuchProcess):
                times = process.cpu_times()
                seconds[process.pid] = times.user + times.system
        return seconds

    def stop(self) -> None:
        processes = self.processes()
        for process in processes:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(processes, timeout=10)
        shutil.rmtree(self.temp, ignore_errors=True)


class _ClusterCPU(threading.Thread):
    """The cluster's CPU seconds during a run, polled: a job's workers exit with its driver."""

    def __init__(self, cluster: Cluster) -> None:
        super().__init__(daemon=True)
        self.cluster = cluster
        self.before = cluster.cpu_seconds()
        self.last = dict(self.before)
        self.stopped = threading.Event()

    def run(self) -> None:
        while not self.stopped.wait(0.1):
            self.last.update(self.cluster.cpu_seconds())

    def spent(self) -> float:
        self.stopped.set()
        self.join()
        self.last.update(self.cluster.cpu_seconds())
        return sum(self.last.values()) - sum(self.before.values())


def run_case(
    case: str,
    corpus: Path,
    stores: Path,
    cluster: Cluster | None = None,
    *,
    model: str = "hashing",
    env: dict[str, str] | None = None,
) -> dict[str, float]:
    folder = stores / case
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    pipeline = folder / "pipeline.yaml"
    execution = "{type: local}" if case == "local" else "{type: ray}"
    parameters: dict[str, object] = {}
    if case != "local" and model == "minilm":
        parameters["embedding_cpus"] = 1
    if cluster is not None and case != "local":
        parameters["address"] = cluster.address
    if parameters:  # JSON is YAML
        execution = json.dumps({"type": "ray", "parameters": parameters})
    pipeline.write_text(
        PIPELINE.format(store=folder / "store", corpus=corpus, execution=execution, model=model),
        encoding="utf-8",
    )
    cluster_cpu = _ClusterCPU(cluster) if cluster is not None else None
    if cluster_cpu is not None:
        cluster_cpu.start()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        process = subprocess.Popen(
            [str(RAGFLOW), "run", str(pipeline), "--json"],
            stdout=out,
            stderr=err,
            text=True,
            env=env,
        )
        sampler = _PeakSampler(process.pid)
        sampler.start()
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        sampler.stopped.set()
        sampler.join()
        cluster_seconds = cluster_cpu.spent() if cluster_cpu is not None else 0.0
        out.seek(0)
        err.seek(0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise SystemExit(f"{case} failed:\n{err.read()[-3000:]}")
        [kb] = json.loads(out.read())["knowledge_bases"]
    return {
        "seconds": seconds,
        "peak_rss_mb": sampler.peak / MB,
        "peak_pss_mb": sampler.peak_pss / MB,
        # The command exactly, and the descendants it does not wait for as last sampled.
        "cpu_seconds": usage.ru_utime
        + usage.ru_stime
        + sum(sampler.descendants_cpu.values())
        + cluster_seconds,
        "cluster_cpu_seconds": cluster_seconds,
        "chunks": kb["chunks_written"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--corpora", type=Path, default=Path("/tmp/ragflow-bench"))
    parser.add_argument("--stores", type=Path, default=Path("/dev/shm/ragflow-bench-ray"))
    parser.add_argument(
        "--nodes", type=int, nargs="*", help="`ray start` clusters of these many one-CPU nodes"
    )
    parser.add_argument(
        "--model",
        choices=["hashing", "minilm"],
        default="hashing",
        help="minilm: Ray embeds in its embedding stage (embedding_cpus: 1), local in the driver",
    )
    parser.add_argument(
        "--baseline",
        help="run this commit's code instead (git archive into a temp dir, ahead on PYTHONPATH, "
        "which Ray's workers inherit)",
    )
    args = parser.parse_args()
    env = None
    if args.baseline:
        tree = Path(tempfile.mkdtemp(prefix="ray-bench-baseline-"))
        archive = subprocess.run(
            ["git", "archive", args.baseline, "ragflow_config"],
            cwd=HERE.parent,
            check=True,
            capture_output=True,
        ).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
        env = {**os.environ, "PYTHONPATH": str(tree)}
    corpus = args.corpora / f"corpus-{args.files}-x1"
    counts = make_corpus(corpus, args.files)
    load = os.getloadavg()
    cases = ("local", *(f"ray-{n}" for n in args.nodes)) if args.nodes else CASES
    runs: dict[str, list[dict[str, float]]] = {case: [] for case in cases}
    for rep in range(args.reps):
        for case in cases if rep % 2 == 0 else cases[::-1]:
            cluster = None
            if case.startswith("ray-"):
                cluster = Cluster(int(case[4:]), Path(tempfile.mkdtemp(prefix="ray-bench-")))
            try:
                runs[case].append(
                    run_case(case, corpus, args.stores, cluster, model=args.model, env=env)
                )
            finally:
                if cluster is not None:
                    cluster.stop()
            print(case, runs[case][-1], file=sys.stderr)
    if args.nodes:
        shutil.rmtree(args.stores, ignore_errors=True)
        print_scaling(args.files, counts, args.reps, load, runs)
        return
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


def print_scaling(
    files: int,
    counts: dict[str, int],
    reps: int,
    load: tuple[float, float, float],
    runs: dict[str, list[dict[str, float]]],
) -> None:
    assert len({run["chunks"] for case in runs.values() for run in case}) == 1
    print(
        f"{files} files ({', '.join(f'{n} {k}' for k, n in counts.items())}), {reps} "
        f"repetition(s), {os.cpu_count()} cores, load average at start {load[0]:.1f}; "
        "medians; CPU over the run's process tree and the cluster's processes.\n"
    )
    print("| case | wall | CPU seconds | files per CPU-second | CPU / local |")
    print("|---|---|---|---|---|")
    local = sorted(run["cpu_seconds"] for run in runs["local"])[len(runs["local"]) // 2]
    for case, measured in runs.items():
        wall = sorted(run["seconds"] for run in measured)[len(measured) // 2]
        cpu = sorted(run["cpu_seconds"] for run in measured)[len(measured) // 2]
        print(f"| {case} | {wall:.1f} s | {cpu:.1f} s | {files / cpu:.0f} | {cpu / local:.2f}x |")


if __name__ == "__main__":
    main()
