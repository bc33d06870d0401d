"""Issue 26 item 1: what a re-run after small edits costs, with greedy and content-defined chunk boundaries.

    python bench/chunk_reuse.py                       # 2,000 files, minilm (about 10 min on 2 cores)
    python bench/chunk_reuse.py --files 200           # a smaller run
    python bench/chunk_reuse.py --chunks-only         # no runs: the chunk counts alone, in minutes
    python bench/chunk_reuse.py --backend pgvector --boundaries content_defined

``--backend`` picks the store (``cases.STORE_BLOCKS``): Qdrant local (the
default), a throwaway PostgreSQL + pgvector server (``tests/_postgres.py``,
one per setting) or Milvus Lite. PostgreSQL runs outside the measured tree,
so its CPU seconds (the postmaster and every backend it started, reaped or
live) print in a line of their own under the table.

For each ``boundaries`` setting of the approx_token chunker (256/32, as in
the other benchmarks) on a copy of one corpus (``make_corpus.py``): a full
run, an unchanged re-run, then one paragraph (drawn from the corpus's pool)
inserted in the middle of 10 % of the text files, and a re-run. Every run is
``ragflow-config run`` in its own process; wall seconds and CPU seconds of
that process and its children (the parser processes) are taken around it.
Re-embedded chunks are the chunk texts of an edited document that its
stored version did not hold: exactly what an update sends to the model
(``tests/incremental/test_chunk_reuse.py``). Results print as a Markdown table.

``--chunks-only`` skips the runs (whose full runs take most of an hour at
2,000 files with minilm on a busy 2-core host) and counts the same chunks
with the pipeline's own text parser and chunker, in memory: what an update
would re-embed and how many chunks a full run embeds, without the model. It
counts every chunker (approx_token, token, recursive, heading, each at 256
of its unit with overlap 32) with each ``boundaries`` setting it has.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import resource
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext, suppress
from pathlib import Path

import psutil
from cases import COLLECTION, OVERLAP, PIPELINE, STORE_BLOCKS, SUFFIXES
from make_corpus import make_corpus, paragraphs

from ragflow_config.pipeline import Pipeline
from ragflow_config.rag import (
    ApproxTokenChunker,
    ChunkerBase,
    HeadingChunker,
    RecursiveChunker,
    TextParser,
    TokenChunker,
)

SETTINGS = ("greedy", "content_defined")
HERE = Path(__file__).resolve().parent
# --chunks-only: each chunker at 256 (its own unit) / 32, with each setting it has;
# heading has no boundaries setting: its cuts at headings already resynchronise.
CHUNKERS: dict[str, tuple[Callable[..., ChunkerBase], tuple[str, ...]]] = {
    "approx_token": (ApproxTokenChunker, SETTINGS),
    "token": (TokenChunker, SETTINGS),
    "recursive": (RecursiveChunker, SETTINGS),
    "heading": (HeadingChunker, ("greedy",)),
}


def write_pipeline(folder: Path, corpus: Path, model: str, boundaries: str, backend: str) -> Path:
    path = folder / "pipeline.yaml"
    path.write_text(
        PIPELINE.format(
            # Milvus Lite's uri names a .db file; Qdrant local's path a folder.
            store_block=STORE_BLOCKS[backend].format(store=folder / "store.db"),
            model=model,
            corpus=corpus,
            include=", ".join(f'"**/*{suffix}"' for suffix in SUFFIXES),
            chunk_size=256,
            # The template's parameters mapping ends after overlap: the setting rides there.
            overlap=f"{OVERLAP}, boundaries: {boundaries}",
            collection=COLLECTION,
        )
    )
    return path


def server_cpu(postmaster: psutil.Process | None) -> float:
    """CPU seconds of a PostgreSQL server so far: the postmaster, its exited and its live children."""
    if postmaster is None:
        return 0.0
    live = 0.0
    for child in postmaster.children():
        with suppress(psutil.NoSuchProcess):  # a backend whose client just left
            live += sum(child.cpu_times()[:2])
    own = postmaster.cpu_times()
    return own.user + own.system + own.children_user + own.children_system + live


@contextmanager
def postgres(parent: Path) -> Iterator[psutil.Process]:
    """A throwaway PostgreSQL + pgvector server whose DSN the pipelines read from $PGVECTOR_DSN."""
    sys.path.insert(0, str(HERE.parent / "tests"))
    from _postgres import restartable_postgres_server

    with restartable_postgres_server(parent) as server:
        os.environ["PGVECTOR_DSN"] = server.dsn
        pid = int((server.data / "postmaster.pid").read_text().split()[0])
        yield psutil.Process(pid)


def timed_run(pipeline: Path, server: psutil.Process | None) -> tuple[float, float, float]:
    """Wall and CPU seconds (the run's process tree) of one ``ragflow-config run``, and the server's CPU."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    server_before = server_cpu(server)
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "ragflow_config.cli", "run", str(pipeline)],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu, server_cpu(server) - server_before


async def chunk_texts(pipeline: Path) -> dict[str, list[str]]:
    """Every stored document's chunk texts, by source path."""
    async with Pipeline.load(pipeline).build() as built:
        (kb,) = built.knowledge_bases.values()
        found = {}
        for summary in await kb.list_documents():
            chunks = await kb.list_chunks(summary.document_id, limit=1_000_000)
            found[summary.source] = [getattr(c.content, "text", "") for c in chunks]
        return found


def edits(corpus: Path, share: float, seed: int) -> dict[Path, str]:
    """``share`` of the text files, each with one paragraph inserted in the middle."""
    rng = random.Random(seed)
    pool = paragraphs()
    texts = sorted(p for p in corpus.rglob("*") if p.suffix in (".md", ".txt"))
    edited = {}
    for path in rng.sample(texts, round(share * len(texts))):
        blocks = path.read_text(encoding="utf-8").rstrip("\n").split("\n\n")
        blocks.insert(len(blocks) // 2, rng.choice(pool))
        edited[path] = "\n\n".join(blocks) + "\n"
    return edited


def edit(corpus: Path, share: float, seed: int) -> list[str]:
    """Make the edits on disk; the edited files' paths."""
    edited = edits(corpus, share, seed)
    for path, text in edited.items():
        path.write_text(text, encoding="utf-8")
    return sorted(path.relative_to(corpus).as_posix() for path in edited)


def count_chunks(corpus: Path, share: float, name: str, boundaries: str) -> dict:
    """The text files' chunks, and what the edits would re-embed, without running anything."""
    parser = TextParser()
    make, settings = CHUNKERS[name]
    options = {"boundaries": boundaries} if len(settings) > 1 else {}
    chunker = make(chunk_size=256, overlap=OVERLAP, **options)
    started, cpu_started = time.perf_counter(), time.process_time()

    async def texts(data: str, name: str) -> list[str]:
        chunks = await chunker.chunk(await parser.parse(data.encode(), name))
        return [getattr(chunk.content, "text", "") for chunk in chunks]

    files = sorted(p for p in corpus.rglob("*") if p.suffix in (".md", ".txt"))
    chunks = {p: asyncio.run(texts(p.read_text(encoding="utf-8"), p.name)) for p in files}
    edited = edits(corpus, share, seed=26)
    re_embedded = 0
    for path, text in edited.items():
        before = set(chunks[path])
        re_embedded += sum(
            1 for chunk in asyncio.run(texts(text, path.name)) if chunk not in before
        )
    return {
        "chunker": name,
        "boundaries": boundaries,
        "chunks": sum(map(len, chunks.values())),
        "edited": len(edited),
        "edited_chunks": sum(len(chunks[path]) for path in edited),
        "re_embedded": re_embedded,
        "seconds": (time.perf_counter() - started, time.process_time() - cpu_started),
    }


def measure(
    source: Path, work: Path, model: str, boundaries: str, share: float, backend: str
) -> dict:
    folder = work / boundaries
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    corpus = folder / "corpus"
    shutil.copytree(source, corpus)
    pipeline = write_pipeline(folder, corpus, model, boundaries, backend)
    with postgres(folder) if backend == "pgvector" else nullcontext() as server:
        full = timed_run(pipeline, server)
        unchanged = timed_run(pipeline, server)
        before = asyncio.run(chunk_texts(pipeline))
        edited = edit(corpus, share, seed=26)
        rerun = timed_run(pipeline, server)
        after = asyncio.run(chunk_texts(pipeline))
    re_embedded = sum(
        sum(1 for text in after[path] if text not in set(before[path])) for path in edited
    )
    return {
        "boundaries": boundaries,
        "chunks": sum(len(texts) for texts in before.values()),
        "edited": len(edited),
        "edited_chunks": sum(len(after[path]) for path in edited),
        "re_embedded": re_embedded,
        "full": full,
        "unchanged": unchanged,
        "rerun": rerun,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--model", choices=["hashing", "minilm"], default="minilm")
    parser.add_argument("--share", type=float, default=0.1, help="share of text files edited")
    parser.add_argument(
        "--boundaries", choices=[*SETTINGS, "both"], default="both", help="settings to run"
    )
    parser.add_argument(
        "--backend",
        choices=sorted(STORE_BLOCKS),
        default="qdrant",
        help="the store (pgvector: a throwaway embedded PostgreSQL server)",
    )
    parser.add_argument("--corpora", type=Path, default=Path("/tmp/ragflow-bench"))
    parser.add_argument("--work", type=Path, default=Path("/dev/shm/ragflow-chunk-reuse"))
    parser.add_argument("--chunks-only", action="store_true", help="count chunks; run nothing")
    args = parser.parse_args()
    source = args.corpora / f"corpus-{args.files}"
    make_corpus(source, args.files)
    if args.chunks_only:
        counted = [
            count_chunks(source, args.share, name, boundaries)
            for name, (_, settings) in CHUNKERS.items()
            for boundaries in settings
        ]
        print(f"\n{args.files} files, text files only, chunks counted without running\n")
        print(
            "| chunker | boundaries | chunks | chunks / greedy's | edited files "
            "| re-embedded / edited file | re-embedded / all | wall / CPU s |"
        )
        print("| --- " * 8 + "|")
        greedy = {row["chunker"]: row["chunks"] for row in counted if row["boundaries"] == "greedy"}
        for row in counted:
            wall, cpu = row["seconds"]
            print(
                f"| {row['chunker']} | {row['boundaries']} | {row['chunks']} "
                f"| {row['chunks'] / greedy[row['chunker']]:.2f} | {row['edited']} "
                f"| {row['re_embedded'] / row['edited']:.2f} "
                f"(of {row['edited_chunks'] / row['edited']:.1f}) "
                f"| {row['re_embedded'] / row['chunks']:.2%} | {wall:.1f} / {cpu:.1f} |"
            )
        return
    settings = SETTINGS if args.boundaries == "both" else (args.boundaries,)
    rows = [measure(source, args.work, args.model, b, args.share, args.backend) for b in settings]
    shutil.rmtree(args.work, ignore_errors=True)

    print(
        f"\n{args.files} files, {args.model}, {args.backend}, "
        f"one paragraph inserted in {args.share:.0%} of the text files\n"
    )
    print(
        "| boundaries | chunks | edited files | re-embedded / edited file | re-embedded / all "
        "| full run wall / CPU s | unchanged re-run wall / CPU s | re-run wall / CPU s "
        "| re-run / full, wall | re-run / full, CPU | bound: 2 x re-embedded / all |"
    )
    print("| --- " * 11 + "|")
    for row in rows:
        share = row["re_embedded"] / row["chunks"]
        (fw, fc, _), (uw, uc, _), (rw, rc, _) = row["full"], row["unchanged"], row["rerun"]
        print(
            f"| {row['boundaries']} | {row['chunks']} | {row['edited']} "
            f"| {row['re_embedded'] / row['edited']:.2f} (of {row['edited_chunks'] / row['edited']:.1f}) "
            f"| {share:.2%} | {fw:.1f} / {fc:.1f} | {uw:.1f} / {uc:.1f} | {rw:.1f} / {rc:.1f} "
            f"| {rw / fw:.3f} | {rc / fc:.3f} | {2 * share:.3f} |"
        )

    if args.backend == "pgvector":
        print(
            "\nPostgreSQL server CPU s (outside the runs' trees): full run / unchanged / edit re-run"
        )
        for row in rows:
            print(
                f"- {row['boundaries']}: {row['full'][2]:.1f} / {row['unchanged'][2]:.1f} "
                f"/ {row['rerun'][2]:.1f}"
            )


if __name__ == "__main__":
    main()
