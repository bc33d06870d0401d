"""Who holds a run's memory on Qdrant Edge: Python's heap (tracemalloc) against the
process's PSS, through the run and the store's close, where the engine builds its
index (issue 49, item 4).

    python bench/run_memory.py PIPELINE_FILE [--top 12] [--json FILE]

Runs ``Pipeline.load(PIPELINE_FILE).run()`` in this process with parser processes as
the CLI starts them, ``tracemalloc`` on from before the run. A thread samples this
process's PSS and the traced (Python) memory every 250 ms; the store's ``__aexit__``
(the engine's optimize, flush and close) is wrapped to take a snapshot of the Python
heap just before it, when the runner's state is at its largest, and to time it.
Reported: the peaks of PSS and of the Python heap, both before and during the close,
and the largest Python allocations before the close, grouped by file and line. PSS
minus the Python heap is the engine's and the imports' native memory. Use
``bench/scale.py``'s pipeline file (``<work>/qdrant_edge-<files>/pipeline.yaml``) on a
fresh store folder. Nothing here is run by the test suite.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _processes import PhasePeaks, rollup


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("pipeline", type=Path)
    parser.add_argument("--top", type=int, default=12)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()

    from ragflow_config.pipeline import Pipeline
    from ragflow_config.rag._stores.qdrant_edge._connection import QdrantEdgeConnection

    tracemalloc.start(1)
    traced = {"python_mb": lambda: tracemalloc.get_traced_memory()[0] / 2**20}
    sampler = PhasePeaks("run", extra=traced)
    result: dict[str, Any] = {}
    leave = QdrantEdgeConnection.__aexit__

    async def timed_exit(self: Any, *exc: Any) -> None:
        if "before_close" not in result:
            snapshot = tracemalloc.take_snapshot()
            result["before_close"] = {
                "python_mb": round(tracemalloc.get_traced_memory()[0] / 2**20, 1),
                "pss_mb": rollup()["pss"],
                "largest": [
                    {"where": str(stat.traceback), "mb": round(stat.size / 2**20, 2)}
                    for stat in snapshot.statistics("lineno")[: args.top]
                ],
            }
            sampler.phase = "close"
            began = time.process_time()
            await leave(self, *exc)
            result["close_cpu_s"] = round(time.process_time() - began, 1)
            sampler.phase = "after"
        else:
            await leave(self, *exc)

    QdrantEdgeConnection.__aexit__ = timed_exit  # type: ignore[method-assign]
    began = time.process_time()
    report = asyncio.run(Pipeline.load(args.pipeline).run())
    result["chunks"] = sum(kb.chunks for kb in report.knowledge_bases)
    result["main_cpu_s"] = round(time.process_time() - began, 1)
    result["peaks"] = sampler.stop()
    print(json.dumps(result, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
