"""How long the command line takes to answer (issue 40, item 1): wall and CPU seconds.

    python bench/cli_latency.py                      # this tree, 15 rounds
    python bench/cli_latency.py --baseline f73fe88   # and the same commands at another commit

Each round runs every case once, in rotating order, as a fresh process; the table
gives medians, and each ratio is taken within a round (the host is shared and noisy).
CPU is the user + system time of the finished process (``RUSAGE_CHILDREN``).

Cases: ``python -c pass`` (the interpreter's own start-up, the floor), ``--version``,
``validate pipelines/local.yaml`` (the pre-commit hook), ``search`` with the hashing
model on the sample corpus (959 chunks in a local Qdrant folder, built once before the
rounds), ``run`` with nothing to do on that corpus (each tree on a store it built
itself, so each re-runs on its own state), and ``import qdrant_client`` alone: the
store client's own cost, which a search on Qdrant cannot avoid. ``--baseline REV`` extracts REV with ``git archive``
and runs its code through ``PYTHONPATH`` (ahead of the editable install). Both trees
are byte-compiled before the rounds, so neither pays for compiling its modules.
"""

from __future__ import annotations

import argparse
import compileall
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
QUERY = "How do I read a file line by line?"
UNCHANGED_RUN = "run, unchanged (hashing, 959 chunks)"


def _pipeline(folder: Path) -> Path:
    """pipelines/local-hashing.yaml with its store in ``folder``."""
    text = (REPO / "pipelines" / "local-hashing.yaml").read_text(encoding="utf-8")
    text = text.replace("path: ../.ragflow/qdrant", f"path: {folder / 'qdrant'}")
    text = text.replace("path: corpus", f"path: {REPO / 'pipelines' / 'corpus'}")
    text = text.replace(
        'exclude: ["SOURCES.md"]', 'exclude: ["SOURCES.md"]\n        allow_outside: true'
    )
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "local-hashing.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def cases(folder: Path) -> dict[str, list[str]]:
    cli = [sys.executable, "-m", "ragflow_config.cli"]
    search = _pipeline(folder)
    return {
        "python -c pass": [sys.executable, "-c", "pass"],
        "import qdrant_client": [sys.executable, "-c", "import qdrant_client"],
        "--version": [*cli, "--version"],
        "validate local.yaml": [*cli, "validate", str(REPO / "pipelines" / "local.yaml")],
        "search (hashing, 959 chunks)": [*cli, "search", str(search), "python-docs", QUERY],
    }


def _once(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run(argv, env=env, cwd=cwd, check=True, capture_output=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def measure(
    trees: dict[str, str | None], rounds: int
) -> dict[tuple[str, str], list[tuple[float, float]]]:
    """``{(tree, case): [(wall, cpu), ...]}``, one pair per round."""
    folder = Path(tempfile.mkdtemp(prefix="ragflow-cli-"))
    argvs = cases(folder)
    # Every tree byte-compiled first: under PYTHONDONTWRITEBYTECODE (set on these machines) a
    # tree without current .pyc files is compiled again at every start, which no installed
    # copy does; the baseline's fresh `git archive` was, and so was any file just edited here.
    for source in [REPO, *(Path(tree) for tree in trees.values() if tree is not None)]:
        compileall.compile_dir(source / "ragflow_config", quiet=1)
    plain = dict(os.environ)
    subprocess.run(  # the search case's store, built once with this tree's code
        [
            sys.executable,
            "-m",
            "ragflow_config.cli",
            "run",
            "-q",
            argvs["search (hashing, 959 chunks)"][4],
        ],
        cwd=folder,
        check=True,
        env=plain,
        capture_output=True,
    )
    environments = {tree: _environment(plain, source) for tree, source in trees.items()}
    commands = {(tree, name): argv for tree in trees for name, argv in argvs.items()}
    for number, tree in enumerate(trees):
        unchanged = _pipeline(folder / f"run-{number}")
        run = [sys.executable, "-m", "ragflow_config.cli", "run", "-q", str(unchanged)]
        built = subprocess.run(run, cwd=folder, env=environments[tree], capture_output=True)
        if built.returncode == 0:
            commands[tree, UNCHANGED_RUN] = [*run, "--workers", "0"]
        else:  # an older tree may not read today's sample pipeline file
            why = built.stderr.decode(errors="replace").strip().splitlines()[:1]
            print(f"{tree}: no {UNCHANGED_RUN!r} case, its run failed: {why}", file=sys.stderr)
    runs = list(commands)
    results: dict[tuple[str, str], list[tuple[float, float]]] = {run: [] for run in runs}
    for round_ in range(rounds):
        shift = round_ % len(runs)
        for tree, name in runs[shift:] + runs[:shift]:
            # Run from the scratch folder: `python -m` puts the working directory first
            # on sys.path, ahead of PYTHONPATH.
            results[tree, name].append(_once(commands[tree, name], environments[tree], folder))
    return results


def _environment(plain: dict[str, str], source: str | None) -> dict[str, str]:
    return plain if source is None else {**plain, "PYTHONPATH": source}


def report(
    results: dict[tuple[str, str], list[tuple[float, float]]], trees: list[str]
) -> list[str]:
    names = list(dict.fromkeys(name for _, name in results))
    floor = results[trees[0], "python -c pass"]
    lines = [
        "| case | tree | median wall s | median CPU s | wall - floor, s | CPU - floor, s |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name in names:
        for tree in trees:
            if (tree, name) not in results:
                continue
            runs = results[tree, name]
            wall = statistics.median(w for w, _ in runs)
            cpu = statistics.median(c for _, c in runs)
            above_wall = statistics.median(
                w - f for (w, _), (f, _) in zip(runs, floor, strict=True)
            )
            above_cpu = statistics.median(c - f for (_, c), (_, f) in zip(runs, floor, strict=True))
            lines.append(
                f"| {name} | {tree} | {wall:.3f} | {cpu:.3f} | {above_wall:.3f} | {above_cpu:.3f} |"
            )
    if len(trees) == 2:
        now, base = trees
        lines += [
            "",
            f"| case | wall, {now} / {base} | CPU, {now} / {base} |",
            "| --- | ---: | ---: |",
        ]
        for name in names:
            if name in ("python -c pass", "import qdrant_client"):
                continue
            if (now, name) not in results or (base, name) not in results:
                continue
            pairs = zip(results[now, name], results[base, name], strict=True)
            ratios = [(a[0] / b[0], a[1] / b[1]) for a, b in pairs]
            wall = statistics.median(r for r, _ in ratios)
            cpu = statistics.median(r for _, r in ratios)
            lines.append(f"| {name} | {wall:.2f}x | {cpu:.2f}x |")
    return lines


def baseline_tree(revision: str) -> str:
    """``revision``'s files in a temporary folder, for PYTHONPATH."""
    folder = tempfile.mkdtemp(prefix="ragflow-base-")
    archive = subprocess.run(
        ["git", "archive", revision, "ragflow_config"], cwd=REPO, check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", folder], input=archive, check=True)
    return folder


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--baseline", metavar="REV", help="also time this commit's code")
    args = parser.parse_args()
    trees: dict[str, str | None] = {"this tree": None}
    if args.baseline:
        trees[args.baseline] = baseline_tree(args.baseline)
    load = os.getloadavg()
    results = measure(trees, args.rounds)
    print(
        f"{args.rounds} rounds; load average at start {load[0]:.1f}, at end {os.getloadavg()[0]:.1f}"
    )
    print("\n".join(report(results, list(trees))))


if __name__ == "__main__":
    main()
