"""What Qdrant Edge holds in memory for a collection, by where it places each part
(issue 49, item 4).

    python bench/edge_memory.py STORE_FOLDER [--collection bench] [--variants pinned cached]

Copies every point of a finished collection (``bench/scale.py``'s
``<work>/qdrant_edge-<files>/store``: dense and sparse vectors, payloads) into a fresh
shard per variant, in a child process each, with the payload indexes the store makes
(``document_id``, ``chunk.chunk_index``, ``terms``), then optimizes it as a writing
store's close does, closes it and loads it again as a search would. A thread samples
the child's PSS every 100 ms, split into anonymous memory (the engine's heap) and
file-backed pages (the shard's mapped files in the page cache, which the kernel takes
back under pressure). Variants:

* ``pinned``: sparse index and ``terms`` index in RAM (the engine's defaults; the
  store's ``terms`` index was made so until it became mapped);
* ``cached``: sparse index and ``terms`` index as mapped files (``Memory.Cached``).

Each phase's peak is the child's PSS at the time: memory freed by an earlier phase
may stay with the process, so read the copy and optimize peaks, not the load's.

Nothing here is run by the test suite.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import qdrant_edge as edge

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _processes import PhasePeaks, rollup


def config(variant: str, size: int) -> Any:
    placement = edge.Memory.Cached if variant == "cached" else edge.Memory.Pinned
    return edge.EdgeConfig(
        vectors=edge.EdgeVectorParams(
            size=size, distance=edge.Distance.Cosine, memory=edge.Memory.Cold
        ),
        sparse_vectors={"lexical": edge.EdgeSparseVectorParams(memory=placement)},
        hnsw_config=edge.HnswIndexConfig(m=16, ef_construct=100, full_scan_threshold=10_000),
        quantization_config=edge.ScalarQuantizationConfig(
            type=edge.ScalarType.Int8, memory=edge.Memory.Cached
        ),
    ), [
        ("document_id", edge.KeywordIndexParams(enable_hnsw=False)),
        ("chunk.chunk_index", edge.IntegerIndexParams(lookup=False, range=True, enable_hnsw=False)),
        (
            "terms",
            edge.IntegerIndexParams(lookup=True, range=False, enable_hnsw=False, memory=placement),
        ),
    ]


def copy(source: str, variant: str, folder: str, out: Any) -> None:
    peaks = PhasePeaks("copy", every=0.1)
    shard = edge.EdgeShard.load(source)
    page, _ = shard.scroll(edge.ScrollRequest(limit=1, with_vector=True))
    made, indexes = config(variant, len(page[0].vector[""]))
    target = edge.EdgeShard.create(folder, made)
    for field, params in indexes:
        target.update(edge.UpdateOperation.create_field_index(field, params))
    offset, points, began = None, 0, time.process_time()
    while True:
        page, offset = shard.scroll(
            edge.ScrollRequest(offset=offset, limit=512, with_payload=True, with_vector=True)
        )
        target.update(
            edge.UpdateOperation.upsert_points(
                [edge.Point(id=p.id, vector=p.vector, payload=p.payload) for p in page]
            )
        )
        points += len(page)
        if offset is None:
            break
    shard.close()
    result: dict[str, Any] = {"variant": variant, "points": points}
    result["copy_cpu_s"] = round(time.process_time() - began, 1)
    peaks.phase, began = "optimize", time.process_time()
    target.optimize()
    target.flush()
    target.close()
    result["optimize_cpu_s"] = round(time.process_time() - began, 1)
    peaks.phase = "load"
    loaded = edge.EdgeShard.load(folder)
    loaded.query(edge.QueryRequest(limit=10, query=edge.Query.Nearest(page[0].vector[""])))
    time.sleep(0.3)
    result["after_load"] = {k: round(v) for k, v in rollup().items() if k in ("pss", "pss_anon")}
    loaded.close()
    result["peaks"] = peaks.stop()
    out.put(result)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("store", type=Path)
    parser.add_argument("--collection", default="bench")
    parser.add_argument("--variants", nargs="+", default=["pinned", "cached"])
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    source = str(args.store / "collections" / args.collection)
    results = []
    context = multiprocessing.get_context("spawn")
    for variant in args.variants:
        with tempfile.TemporaryDirectory(dir=args.store.parent) as temporary:
            out = context.Queue()
            child = context.Process(target=copy, args=(source, variant, f"{temporary}/shard", out))
            child.start()
            results.append(out.get())
            child.join()
            print(json.dumps(results[-1]), flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
