"""Recall@10 against CPU per query on a finished Qdrant Edge collection, for a grid of
search settings and, rebuilt from the same vectors, of index settings (issue 49).

    python bench/edge_recall.py STORE_FOLDER CORPUS [--collection bench] [--queries 200]
        [--ef 128 256 512 1024] [--oversampling 1 2 4 8] [--rebuild 16:100 32:200]

STORE_FOLDER is a ``qdrant_edge`` store that ``bench/scale.py`` left (its
``<work>/qdrant_edge-<files>/store``), CORPUS the corpus it indexed, whose phrases are
the queries (``cases._queries``, the same as ``scale.py``'s). The truth is the engine's
exact search on the original vectors. A hit counts as found when it is in the exact top
10 or its exact score ties the exact 10th (the corpus repeats paragraphs, so many chunks
share a vector, and which of the tied ones make the 10 is arbitrary): every setting
here rescores with, or searches, the original vectors, so a hit's score is exact.

CPU per query is this process's CPU around the engine's ``query`` alone (no embedding,
no payload decoding): what the setting costs, measured one setting after another in
one process. ``--rebuild m:ef_construct`` copies the vectors into a fresh shard in a
temporary folder with that HNSW graph (int8 as the store's), optimizes it, and probes
it too. Nothing here is run by the test suite.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import qdrant_edge as edge

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _processes import rollup
from cases import _queries

Hit = tuple[str, float]


def vectors(queries: list[str]) -> list[list[float]]:
    from ragflow_config.embedding import HashingEmbeddingModel

    model = HashingEmbeddingModel(HashingEmbeddingModel.Parameters(dimensions=384))
    return [model.embed_text(query) for query in queries]


def search(shard: Any, queries: list[list[float]], params: Any) -> tuple[list[list[Hit]], float]:
    """Each query's top 10 (point id, score) and the CPU milliseconds per query."""
    found = []
    began = time.process_time()
    for vector in queries:
        request = edge.QueryRequest(
            limit=10, query=edge.Query.Nearest(vector), with_payload=False, params=params
        )
        found.append([(str(p.id), p.score) for p in shard.query(request)])
    return found, 1000 * (time.process_time() - began) / len(queries)


def recall(found: list[list[Hit]], truth: list[list[Hit]]) -> float:
    hits = 0
    for got, exact in zip(found, truth, strict=True):
        ids = {point for point, _ in exact}
        tenth = exact[-1][1]
        hits += min(len(exact), sum(p in ids or s >= tenth - 1e-5 for p, s in got[: len(exact)]))
    return round(hits / sum(len(exact) for exact in truth), 4)


def grid(shard: Any, queries: list[list[float]], truth: list[list[Hit]], args: Any) -> list[dict]:
    rows = []
    for ef in args.ef:
        settings: list[tuple[str, Any]] = [
            ("originals (quantization ignored)", edge.QuantizationSearchParams(ignore=True))
        ]
        settings += [
            (f"int8, rescored x{o:g}", edge.QuantizationSearchParams(rescore=True, oversampling=o))
            for o in args.oversampling
        ]
        for name, quantization in settings:
            params = edge.SearchParams(hnsw_ef=ef, quantization=quantization)
            found, cpu = search(shard, queries, params)
            row = {"search_ef": ef, "scoring": name, "recall_at_10": recall(found, truth)}
            rows.append({**row, "cpu_ms_per_query": round(cpu, 2)})
            print(json.dumps(rows[-1]), flush=True)
    return rows


def rebuilt(shard: Any, m: int, ef_construct: int, folder: Path) -> Any:
    """A fresh shard in ``folder`` with the same points' vectors and an m/ef_construct graph."""
    config = edge.EdgeConfig(
        vectors=edge.EdgeVectorParams(size=384, distance=edge.Distance.Cosine),
        hnsw_config=edge.HnswIndexConfig(
            m=m, ef_construct=ef_construct, full_scan_threshold=10_000
        ),
        quantization_config=edge.ScalarQuantizationConfig(
            type=edge.ScalarType.Int8, memory=edge.Memory.Cached
        ),
    )
    copy = edge.EdgeShard.create(str(folder), config)
    offset = None
    while True:
        page, offset = shard.scroll(
            edge.ScrollRequest(offset=offset, limit=2048, with_payload=False, with_vector=[""])
        )
        points = [edge.Point(id=p.id, vector={"": _dense(p.vector)}, payload={}) for p in page]
        copy.update(edge.UpdateOperation.upsert_points(points))
        if offset is None:
            break
    began = time.process_time()
    copy.optimize()
    print(f"rebuilt m {m} ef_construct {ef_construct}: {time.process_time() - began:.1f} s CPU")
    return copy


def _memory() -> dict[str, float]:
    """This process's PSS in MB: anonymous (the engine's heap, Python) and file-backed
    (the shard's mapped files in the page cache, which the kernel can reclaim)."""
    memory = rollup()
    return {key: round(memory[key]) for key in ("pss", "pss_anon", "pss_file")}


def _dense(vector: Any) -> list[float]:
    """A scrolled point's dense vector: asked for by name, the engine returns it bare."""
    return vector[""] if isinstance(vector, dict) else vector


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("store", type=Path)
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--collection", default="bench")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--ef", type=int, nargs="+", default=[128, 256, 512, 1024])
    parser.add_argument("--oversampling", type=float, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--rebuild", nargs="*", default=[], help="m:ef_construct pairs")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    folders = sorted((args.store / "collections").glob(f"{args.collection}*"))
    folder = next(f for f in folders if (f / "edge_config.json").exists() or f.is_dir())
    shard = edge.EdgeShard.load(str(folder))
    info = shard.info()
    described = {
        "collection": folder.name,
        "points": info.points_count,
        "segments": info.segments_count,
        "indexed_vectors": info.indexed_vectors_count,
        "after_load": _memory(),
    }
    print(json.dumps(described), flush=True)
    queries = vectors(_queries(args.corpus, args.queries))
    truth, exact_cpu = search(shard, queries, edge.SearchParams(exact=True))
    result: dict[str, Any] = {**described, "exact_cpu_ms_per_query": round(exact_cpu, 2)}
    result["store"] = grid(shard, queries, truth, args)
    result["after_searches"] = _memory()
    for pair in args.rebuild:
        m, ef_construct = (int(x) for x in pair.split(":"))
        with tempfile.TemporaryDirectory(dir=args.store.parent) as temporary:
            copy = rebuilt(shard, m, ef_construct, Path(temporary) / "shard")
            result[f"m{m}-efc{ef_construct}"] = grid(copy, queries, truth, args)
            copy.close()
    shard.close()
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
