"""One benchmark case, run in a fresh interpreter by ``bench/run.py``.

    python bench/cases.py ours       --corpus DIR --store DIR --model hashing
    python bench/cases.py floor      --corpus DIR --store DIR --model hashing
    python bench/cases.py agentscope --corpus DIR --store DIR --model hashing
    python bench/cases.py search     --corpus DIR --store DIR --model hashing --queries 300

Every case imports what it needs first and starts its clock after, so the
seconds compare work, not interpreter start-up. The last line printed is
``RESULT {json}``.

* ``ours``: ``Pipeline.load(file).run()`` on a pipeline file written next to
  the store (text, docx, excel and pptx parsers; approx_token 256/32; the
  model; Qdrant local on ``--store``, or with ``--backend pgvector`` the
  PostgreSQL server at ``$PGVECTOR_DSN``). Run it twice on one store for a
  full run, then an unchanged re-run.
* ``floor``: the least a script can do for the same chunks: our parsers and
  chunker in this one process, then the same model and ``qdrant-client``
  upserts of 256 points, with a minimal payload. No change tracking. It also
  reports ``store_seconds``, the time inside those upserts: Qdrant's local
  mode runs in the writing process, so no framework can spread it over cores.
* ``agentscope``: see ``agentscope_case.py``.
* ``search``: ``KnowledgeBase.search`` against the bare query it wraps (embed
  the query, ``query_points`` with payloads), alternating query by query on
  the collection a previous ``ours`` case left in ``--store``.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import random
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

from ragflow_config.embedding import (
    EmbeddingModelBase,
    HashingEmbeddingModel,
    MiniLMEmbeddingModel,
)
from ragflow_config.pipeline import Pipeline, RunOptions
from ragflow_config.rag import ApproxTokenChunker, ExcelParser, PPTParser, TextParser, WordParser

COLLECTION = "bench"
CHUNK_SIZE, OVERLAP = 256, 32
SUFFIXES = (".md", ".txt", ".docx", ".xlsx", ".pptx")
UPSERT_BATCH = 256

PIPELINE = """\
version: 1
vector_stores:
  local:
{store_block}
embeddings:
  model:
    type: {model}
knowledge_bases:
  - name: bench
    description: The benchmark corpus.
    sources:
      - path: {corpus}
        include: [{include}]
        allow_outside: true  # the corpus lives wherever the benchmark was pointed
    parsers: [{{type: text}}, {{type: docx}}, {{type: excel}}, {{type: pptx}}]
    chunker:
      type: approx_token
      parameters: {{chunk_size: {chunk_size}, overlap: {overlap}}}
    embedding: model
    vector_store: local
    collection: {collection}
"""


def our_model(name: str) -> EmbeddingModelBase:
    """The model a pipeline's ``type: <name>`` with no parameters builds."""
    return {"hashing": HashingEmbeddingModel, "minilm": MiniLMEmbeddingModel}[name]()


def corpus_files(corpus: Path) -> list[tuple[Path, str]]:
    """The files the pipeline indexes, in its order (sorted walk, hidden names skipped)."""
    return sorted(
        (path, path.relative_to(corpus).as_posix())
        for path in corpus.rglob("*")
        if path.is_file()
        and path.suffix in SUFFIXES
        and not any(part.startswith(".") for part in path.relative_to(corpus).parts)
    )


STORE_BLOCKS = {
    "qdrant": "    type: qdrant\n    parameters: {{path: {store}, local_snapshot: {snapshot}}}",
    # The server's DSN comes from $PGVECTOR_DSN, as a pipeline's secrets do.
    "pgvector": "    type: pgvector",
    "milvus": "    type: milvus_lite\n    parameters: {{uri: {store}}}",  # Milvus Lite: a .db file
}


def pipeline_file(
    corpus: Path, store: Path, model: str, backend: str = "qdrant", snapshot: bool = True
) -> Path:
    path = store.parent / "pipeline.yaml"
    include = ", ".join(f'"**/*{suffix}"' for suffix in SUFFIXES)
    path.write_text(
        PIPELINE.format(
            store_block=STORE_BLOCKS[backend].format(store=store, snapshot=str(snapshot).lower()),
            model=model,
            corpus=corpus,
            include=include,
            chunk_size=CHUNK_SIZE,
            overlap=OVERLAP,
            collection=COLLECTION,
        )
    )
    return path


async def ours(args: argparse.Namespace) -> dict[str, Any]:
    import qdrant_client  # noqa: F401  (imported before the clock, as the other cases do)

    path = pipeline_file(
        args.corpus, args.store, args.model, args.backend, args.local_snapshot == "on"
    )
    started = time.perf_counter()
    report = await Pipeline.load(path).run(options=RunOptions(workers=args.workers))
    seconds = time.perf_counter() - started
    (kb,) = report.knowledge_bases
    if report.failed:
        raise SystemExit(f"run failed: {json.dumps(kb.as_dict()['counts'])} {kb.aborted or ''}")
    return {
        "seconds": seconds,
        "files": len(kb.changes),
        "chunks": kb.chunks,
        "added": kb.count("add"),
        "unchanged": kb.count("unchanged"),
    }


async def floor(args: argparse.Namespace) -> dict[str, Any]:
    from qdrant_client import AsyncQdrantClient, models

    files = corpus_files(args.corpus)
    model = our_model(args.model)
    parsers = [TextParser(), WordParser(), ExcelParser(), PPTParser()]
    by_suffix = {s: p for p in parsers for s in p.supported_extensions()}
    chunker = ApproxTokenChunker(chunk_size=CHUNK_SIZE, overlap=OVERLAP)
    started = time.perf_counter()
    client = AsyncQdrantClient(path=str(args.store))
    await client.create_collection(
        COLLECTION,
        vectors_config=models.VectorParams(size=model.dimensions, distance=models.Distance.COSINE),
    )
    pending: list[dict[str, Any]] = []
    written = 0
    store_seconds = 0.0

    async def flush() -> None:
        nonlocal store_seconds
        vectors = (await model([p["text"] for p in pending])).embeddings
        points = [
            models.PointStruct(
                id=str(uuid.uuid5(uuid.NAMESPACE_URL, f"{p['source']}#{p['chunk_index']}")),
                vector=vector,
                payload=p,
            )
            for p, vector in zip(pending, vectors, strict=True)
        ]
        upsert_started = time.perf_counter()
        await client.upsert(COLLECTION, points=points, wait=True)
        store_seconds += time.perf_counter() - upsert_started
        pending.clear()

    for absolute, relative in files:
        parser = by_suffix[absolute.suffix]
        chunks = await chunker.chunk(await parser.parse(absolute.read_bytes(), relative))
        pending.extend(
            {"source": relative, "chunk_index": c.chunk_index, "text": c.content.text}
            for c in chunks
        )
        written += len(chunks)
        if len(pending) >= UPSERT_BATCH:
            await flush()
    if pending:
        await flush()
    await client.close()
    return {
        "seconds": time.perf_counter() - started,
        "files": len(files),
        "chunks": written,
        "store_seconds": store_seconds,
    }


async def agentscope(args: argparse.Namespace) -> dict[str, Any]:
    import pandas  # noqa: F401  (AgentScope's ExcelParser imports it on first use)
    from agentscope_case import ingest

    files = corpus_files(args.corpus)
    model = our_model(args.model)
    started = time.perf_counter()
    counts = await ingest(files, args.store, model, COLLECTION, CHUNK_SIZE, OVERLAP)
    return {"seconds": time.perf_counter() - started, **counts}


def _queries(corpus: Path, count: int) -> list[str]:
    """Phrases of 3 to 8 words from the corpus's text files, chosen by a fixed seed."""
    rng = random.Random(11)
    texts = [p for p, _ in corpus_files(corpus) if p.suffix in (".md", ".txt")]
    queries = []
    while len(queries) < count:
        words = rng.choice(texts).read_text(encoding="utf-8").split()
        length = rng.randint(3, 8)
        start = rng.randrange(max(1, len(words) - length))
        queries.append(" ".join(words[start : start + length]))
    return queries


async def search(args: argparse.Namespace) -> dict[str, Any]:
    path = pipeline_file(args.corpus, args.store, args.model)
    queries = _queries(args.corpus, args.queries)
    ours_ms: list[float] = []
    bare_ms: list[float] = []
    async with Pipeline.load(path).build() as built:
        kb = built.knowledge_base("bench")
        client = kb.vector_store.client  # the same open client and collection
        model = kb.embedding_model

        async def bare(query: str) -> list[Any]:
            vector = (await model([query])).embeddings[0]
            response = await client.query_points(
                COLLECTION, query=vector, limit=5, with_payload=True
            )
            return response.points

        for query in queries[:10]:  # warm both paths
            await kb.search([query], top_k=5)
            await bare(query)
        for number, query in enumerate(queries):
            # Alternate which goes first, so neither always meets a warmer cache.
            order = (
                [("ours", kb.search), ("bare", None)]
                if number % 2
                else [("bare", None), ("ours", kb.search)]
            )
            for name, _ in order:
                started = time.perf_counter()
                hits = await kb.search([query], top_k=5) if name == "ours" else await bare(query)
                elapsed = (time.perf_counter() - started) * 1000
                (ours_ms if name == "ours" else bare_ms).append(elapsed)
                assert len(hits) == 5, f"{name}: {len(hits)} hits for {query!r}"
    return {
        "queries": len(queries),
        "ours_median_ms": statistics.median(ours_ms),
        "ours_p95_ms": _p95(ours_ms),
        "bare_median_ms": statistics.median(bare_ms),
        "bare_p95_ms": _p95(bare_ms),
    }


def _p95(values: list[float]) -> float:
    return statistics.quantiles(values, n=20)[-1]


CASES = {"ours": ours, "floor": floor, "agentscope": agentscope, "search": search}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("case", choices=sorted(CASES))
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--store", type=Path, required=True, help="Qdrant local folder")
    parser.add_argument(
        "--backend",
        choices=sorted(STORE_BLOCKS),
        default="qdrant",
        help="ours: the pipeline's store (pgvector: the server at $PGVECTOR_DSN)",
    )
    parser.add_argument(
        "--local-snapshot",
        choices=["on", "off"],
        default="on",
        help="ours on Qdrant local: the store's local_snapshot (the folder's kept answers)",
    )
    parser.add_argument("--model", choices=["hashing", "minilm"], default="hashing")
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument(
        "--workers", type=int, default=None, help="ours: parser processes (default: the runner's)"
    )
    args = parser.parse_args()
    args.corpus, args.store = args.corpus.resolve(), args.store.resolve()
    args.store.parent.mkdir(parents=True, exist_ok=True)
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    # Every case needs these; importing them before any clock starts keeps
    # one-off import time (seconds on a loaded machine) out of the comparison.
    for module in (
        "qdrant_client",
        "qdrant_client.local.async_qdrant_local",
        "docx",
        "pptx",
        "openpyxl",
    ):
        importlib.import_module(module)
    result = asyncio.run(CASES[args.case](args))
    print("RESULT " + json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
