"""What ``explain=True`` costs a search, per retrieval mode, on one indexed pipeline.

    python bench/explain_cost.py PIPELINE.yaml KB TOPICS [--reps 5] [--top-k 10]

PIPELINE.yaml must have been run with a lexical side (`retrieval: {mode:
hybrid}`); TOPICS holds one `<id>\\t<query>` line a query (as
`../shared/data/ir/med/topics`). Each repetition runs every query through
`dense`, `lexical` and `hybrid` handles on the same collection, once
without and once with explain, alternating which goes first. Reported per
mode: median ms per query each way, the with/without ratio within each
repetition (median over repetitions), and this process's CPU seconds (the
embedded store runs in it) beside the wall seconds. The rankings are also
compared: they must be equal.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time

from ragflow_config.pipeline import Pipeline
from ragflow_config.rag import KnowledgeBase


def cpu() -> float:
    times = os.times()
    return times.user + times.system


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pipeline")
    parser.add_argument("kb")
    parser.add_argument("topics")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--top-k", type=int, default=10)
    args = parser.parse_args()
    with open(args.topics, encoding="utf-8") as file:
        queries = [line.split("\t", 1)[1].strip() for line in file if "\t" in line]
    async with Pipeline.load(args.pipeline).build([args.kb]) as built:
        base: KnowledgeBase = built.knowledge_base(args.kb)
        print(f"{len(queries)} queries, top_k {args.top_k}, {args.reps} repetitions")
        print(f"{'mode':8} {'plain ms':>9} {'explain ms':>11} {'ratio':>6} {'CPU s/wall s':>13}")
        for mode in ("dense", "lexical", "hybrid"):
            kb = base.with_mode(mode)
            await kb.search([queries[0]], top_k=args.top_k)  # warm: the model, the store
            times: dict[bool, list[float]] = {False: [], True: []}
            ratios, spent, wall = [], 0.0, 0.0
            for rep in range(args.reps):
                took = {}
                for explain in (bool(rep % 2), not rep % 2):
                    started, started_cpu = time.perf_counter(), cpu()
                    rankings = [
                        [
                            (h.document_id, h.chunk.chunk_index)
                            for h in await kb.search([q], top_k=args.top_k, explain=explain)
                        ]
                        for q in queries
                    ]
                    took[explain] = time.perf_counter() - started
                    wall += took[explain]
                    spent += cpu() - started_cpu
                    times[explain].append(took[explain] / len(queries) * 1000)
                    if explain:
                        explained = rankings
                    else:
                        plain = rankings
                assert explained == plain, f"{mode}: explain changed a ranking"
                ratios.append(took[True] / took[False])
            print(
                f"{mode:8} {statistics.median(times[False]):9.2f} "
                f"{statistics.median(times[True]):11.2f} {statistics.median(ratios):6.2f} "
                f"{spent:6.1f}/{wall:5.1f}"
            )


if __name__ == "__main__":
    asyncio.run(main())
