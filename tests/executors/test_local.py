"""The local executor's per-file time limit: a parser that never returns fails its file alone."""

from __future__ import annotations

import asyncio
import gc

from executors._parsers import FreezeCountParser, HangingTextParser
from ragflow_config import ParserError
from ragflow_config.executors.base import time_limit_reason
from ragflow_config.executors.local import ParserProcesses
from ragflow_config.rag import ApproxTokenChunker


async def test_a_file_past_its_time_limit_fails_alone_and_the_others_parse() -> None:
    parser, chunker = HangingTextParser(), ApproxTokenChunker(chunk_size=32, overlap=4)
    good = [(f"{i}.txt", f"file number {i} parses in no time".encode()) for i in range(6)]
    processes = ParserProcesses(1, [], parse_timeout=3)
    try:
        # The first file is parsed here while the process starts (which no limit
        # can stop, so the test sends a good one); the rest go to the process.
        await processes.prepare(parser, chunker, None, good[0][1], good[0][0], backlog=None)
        assert processes._started is not None and await processes._started
        files = [*good[:3], ("hang.txt", b"never parsed"), *good[3:]]
        outcomes = await asyncio.gather(
            *(processes.prepare(parser, chunker, None, data, name) for name, data in files),
            return_exceptions=True,
        )
    finally:
        processes.shutdown()
    results = {name: outcome for (name, _), outcome in zip(files, outcomes, strict=True)}
    hung = results.pop("hang.txt")
    assert isinstance(hung, ParserError) and hung.cause == time_limit_reason(3)
    parsed = {
        name: [chunk.content.text for chunk in chunks] for name, (chunks, _) in results.items()
    }
    assert parsed == {name: [data.decode()] for name, data in good}


async def test_parser_processes_fork_from_a_server_whose_imports_are_frozen() -> None:
    """Frozen, the server's imported objects are never visited by a parser process's
    garbage collector, so their pages stay shared (issue 40: ~15 MB of PSS on 2,000 files)."""
    parser, chunker = FreezeCountParser(), ApproxTokenChunker(chunk_size=32, overlap=4)
    processes = ParserProcesses(1, [])
    try:
        here, _ = await processes.prepare(parser, chunker, None, b"parsed here", "a.txt")
        assert processes._started is not None and await processes._started
        there, _ = await processes.prepare(parser, chunker, None, b"parsed there", "b.txt")
    finally:
        processes.shutdown()
    assert here[0].metadata["frozen"] == gc.get_freeze_count()  # this process: as it was
    assert there[0].metadata["frozen"] > 1000  # every object the server had imported
