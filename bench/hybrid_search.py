"""KnowledgeBase.search per retrieval mode, on one indexed pipeline: what hybrid costs.

    python bench/hybrid_search.py PIPELINE.yaml KB TOPICS [--reps 3] [--top-k 10] [--options]
        [--rerank-url URL [--rerank-api tei|cohere] [--rerank-candidates 50]]

PIPELINE.yaml must have been run with `retrieval: {mode: hybrid}` (any mode
with a lexical side); TOPICS holds one `<id>\\t<query>` line a query (as
`../shared/data/ir/med/topics`). Each repetition runs every query through
the same store with the knowledge base's retrieval switched to `dense`,
`lexical`, `hybrid` (rrf) and `hybrid` (weighted), in rotating order; with
``--options``, also each of the first three with ``group_by: document`` and
with ``feedback: {}``.
With ``--rerank-url`` (a TEI, Jina or Cohere ``/rerank`` server; its key
in ``RERANK_API_KEY``), ``hybrid weighted + rerank`` is measured too.
Reported per mode: median ms per query, the ratio to `dense` within each
repetition (median over repetitions), and this process's CPU seconds
(user + system; embedded stores run in it) beside the wall seconds.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import time
from pathlib import Path

from ragflow_config.pipeline import Pipeline
from ragflow_config.rag import KnowledgeBase, RetrievalSettings
from ragflow_config.rerankers import HttpReranker

MODES = {
    "dense": {"mode": "dense"},
    "lexical": {"mode": "lexical"},
    "hybrid rrf": {"mode": "hybrid"},
    "hybrid weighted": {"mode": "hybrid", "fusion": {"method": "weighted"}},
}
# --options: document grouping and pseudo-relevance feedback (issue 39), at their defaults.
OPTIONS = {
    "dense + group": {"mode": "dense", "group_by": "document"},
    "dense + PRF": {"mode": "dense", "feedback": {}},
    "lexical + group": {"mode": "lexical", "group_by": "document"},
    "lexical + PRF": {"mode": "lexical", "feedback": {}},
    "hybrid rrf + group": {"mode": "hybrid", "group_by": "document"},
    "hybrid rrf + PRF": {"mode": "hybrid", "feedback": {}},
}


def cpu() -> float:
    times = os.times()
    return times.user + times.system


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("pipeline")
    parser.add_argument("kb")
    parser.add_argument("topics")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--top-k", type=int, default=10)
    parser.add_argument(
        "--options", action="store_true", help="also group_by: document and feedback: {}"
    )
    parser.add_argument("--rerank-url", help="base URL of a /rerank server")
    parser.add_argument("--rerank-api", choices=["tei", "cohere"], default="tei")
    parser.add_argument("--rerank-candidates", type=int, default=50)
    args = parser.parse_args()
    modes = dict(MODES) | (OPTIONS if args.options else {})
    reranker = None
    if args.rerank_url:
        reranker = HttpReranker(base_url=args.rerank_url, api=args.rerank_api)
        modes["hybrid weighted + rerank"] = {
            **MODES["hybrid weighted"],
            "rerank": {"reranker": "http", "candidates": args.rerank_candidates},
        }
    queries = [
        line.split("\t", 1)[1]
        for line in Path(args.topics).read_text(encoding="utf-8").splitlines()
        if "\t" in line
    ]
    async with Pipeline.load(args.pipeline).build() as built:
        base = built.knowledge_base(args.kb)
        bases = {
            name: KnowledgeBase(
                name=base.name,
                description=base.description,
                embedding_model=base.embedding_model,
                vector_store=base.vector_store,
                collection=base.collection,
                metadata_filter=base.metadata_filter,
                retrieval=base.retrieval.model_copy(
                    update=dict(RetrievalSettings.model_validate(settings))
                ),
                reranker=reranker if "rerank" in settings else None,
            )
            for name, settings in modes.items()
        }
        for kb in bases.values():  # warm up: model loaded, collection checked
            await kb.search([queries[0]], top_k=args.top_k)
        per_query: dict[str, list[float]] = {name: [] for name in modes}
        ratios: dict[str, list[float]] = {name: [] for name in modes}
        cpu_seconds: dict[str, float] = dict.fromkeys(modes, 0.0)
        wall_seconds: dict[str, float] = dict.fromkeys(modes, 0.0)
        names = list(modes)
        for rep in range(args.reps):
            order = names[rep % len(names) :] + names[: rep % len(names)]
            this_rep: dict[str, float] = {}
            for name in order:
                start, start_cpu = time.perf_counter(), cpu()
                for query in queries:
                    t = time.perf_counter()
                    await bases[name].search([query], top_k=args.top_k)
                    per_query[name].append(time.perf_counter() - t)
                wall = time.perf_counter() - start
                this_rep[name] = wall
                wall_seconds[name] += wall
                cpu_seconds[name] += cpu() - start_cpu
            for name in names:
                ratios[name].append(this_rep[name] / this_rep["dense"])
    print(f"{len(queries)} queries x {args.reps} repetitions, top_k {args.top_k}")
    print(f"{'mode':<16} {'ms/query':>9} {'x dense':>8} {'wall s':>7} {'cpu s':>7}")
    for name in names:
        print(
            f"{name:<16} {1000 * statistics.median(per_query[name]):>9.1f} "
            f"{statistics.median(ratios[name]):>8.2f} {wall_seconds[name]:>7.2f} "
            f"{cpu_seconds[name]:>7.2f}"
        )


if __name__ == "__main__":
    asyncio.run(main())
