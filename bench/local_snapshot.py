"""What a local Qdrant folder's snapshot saves an unchanged re-run, and costs a full run.

    python bench/local_snapshot.py [--files 2000] [--reps 3]

For each repetition, in alternating order, ``local_snapshot`` on and off: a
full run into a fresh local folder, then an unchanged re-run on it, each a
fresh interpreter (``cases.py ours``, the same pipeline as ``run.py``'s),
measured as ``run.py`` measures (``run_case``: CPU of the process tree with
start-up, peak RSS and PSS of the tree). Prints a Markdown table of medians
and the ratios on / off, and re-run / full run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from make_corpus import make_corpus
from run import Measured, fresh, run_case

STORES = Path("/dev/shm") if Path("/dev/shm").is_dir() else Path("/tmp")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--corpora", type=Path, default=Path("/tmp/ragflow-bench"))
    args = parser.parse_args()
    corpus = args.corpora / f"corpus-{args.files}"
    make_corpus(corpus, args.files)
    runs: dict[tuple[str, str], list[Measured]] = {}
    for rep in range(args.reps):
        modes = ["on", "off"] if rep % 2 == 0 else ["off", "on"]
        for mode in modes:
            store = fresh(STORES / f"ragflow-snapshot-bench-{mode}" / "qdrant")
            for phase in ("full", "re-run"):
                measured = run_case("ours", corpus, store, "hashing", "--local-snapshot", mode)
                runs.setdefault((mode, phase), []).append(measured)
                print(
                    f"rep {rep + 1} snapshot {mode} {phase}: {measured.seconds:.2f} s in the run, "
                    f"{measured.cpu_seconds:.2f} CPU-s, peak PSS {measured.peak_tree_pss_mb:.0f} MB",
                    file=sys.stderr,
                )
        fresh(STORES / "ragflow-snapshot-bench-on" / "qdrant")
        fresh(STORES / "ragflow-snapshot-bench-off" / "qdrant")

    def median(mode: str, phase: str, field: str) -> float:
        return statistics.median(getattr(m, field) for m in runs[(mode, phase)])

    print("| snapshot | run | s in the run | CPU s, tree | peak RSS, tree MB | peak PSS, tree MB |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for mode in ("off", "on"):
        for phase in ("full", "re-run"):
            print(
                f"| {mode} | {phase} | {median(mode, phase, 'seconds'):.2f} "
                f"| {median(mode, phase, 'cpu_seconds'):.2f} "
                f"| {median(mode, phase, 'peak_tree_mb'):.0f} "
                f"| {median(mode, phase, 'peak_tree_pss_mb'):.0f} |"
            )
    print()
    for mode in ("off", "on"):
        print(
            f"- snapshot {mode}: re-run / full run, time in the run "
            f"{median(mode, 're-run', 'seconds') / median(mode, 'full', 'seconds'):.3f}x, "
            f"CPU of the tree {median(mode, 're-run', 'cpu_seconds') / median(mode, 'full', 'cpu_seconds'):.3f}x, "
            f"peak PSS {median(mode, 're-run', 'peak_tree_pss_mb') / median(mode, 'full', 'peak_tree_pss_mb'):.2f}x"
        )
    print(
        "- full run, snapshot on / off: CPU "
        f"{median('on', 'full', 'cpu_seconds') / median('off', 'full', 'cpu_seconds'):.3f}x, "
        f"time in the run {median('on', 'full', 'seconds') / median('off', 'full', 'seconds'):.3f}x"
    )


if __name__ == "__main__":
    main()
