"""Helpers for the `ragflow-config serve` tests: a two-tenant corpus and a real server process."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path

import httpx
from embedding_http._server import EmbeddingServer

from ragflow_config.pipeline import Pipeline, RunOptions

TOKEN = "test-token-0123456789abcdef"

# Two tenants' documents; each sentence names what only it holds, so a lexical
# (hashing) model finds it by those words.
CORPUS = {
    "tutorial/files.md": "# Reading files\n\nOpen a file with open() and read it line by line "
    "with a for loop over the file object. Close it with a with statement.\n\n"
    "Writing files uses the write method of the file object, then close.",
    "tutorial/lists.md": "# Lists\n\nA list holds items in order. Append adds an item to the "
    "end of the list; pop removes the last item of the list.",
    "tutorial/loops.md": "# Loops\n\nThe for statement iterates over the items of any sequence, "
    "such as a list or a string, in the order that they appear.",
    "howto/logging.md": "# Logging HOWTO\n\nConfigure logging with basicConfig; a handler sends "
    "log records to a file. The secret howto word is zanzibar.",
    "howto/sorting.md": "# Sorting HOWTO\n\nThe sorted function takes a key function; sorting "
    "is stable. Read the file of records, then sort them by key.",
}

PIPELINE = """\
version: 1
vector_stores:
  store: {store}
embeddings:
  hashing: {embedding}
knowledge_bases:
  - name: tutorial
    description: The Python tutorial, for newcomers.
    sources: [{{path: corpus/tutorial}}]
    parsers: [{{type: text}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 24, overlap: 0}}}}
    embedding: hashing
    vector_store: store
    collection: {collection}
    metadata_filter: {{tenant_id: tutorial}}
  - name: howto
    description: HOWTO guides on logging and sorting.
    sources: [{{path: corpus/howto}}]
    parsers: [{{type: text}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 24, overlap: 0}}}}
    embedding: hashing
    vector_store: store
    collection: {collection}
    metadata_filter: {{tenant_id: howto}}
{middlewares}"""

AGENTIC = """\
middlewares:
  - type: rag
    knowledge_bases: [tutorial, howto]
    parameters: {mode: agentic, top_k: 3}
"""

# MCP's first request, as a client sends it
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "1"},
    },
}

QDRANT = "{type: qdrant, parameters: {path: store}}"


HASHING = "{type: hashing, parameters: {dimensions: 64}}"


def write_pipeline(
    folder: Path,
    store: str = QDRANT,
    middlewares: str = AGENTIC,
    corpus: dict[str, str] = CORPUS,
    *,
    collection: str = "shared",
    embedding: str = HASHING,
) -> Path:
    for name, text in corpus.items():
        path = folder / "corpus" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    file = folder / "pipeline.yaml"
    file.write_text(
        PIPELINE.format(
            store=store, middlewares=middlewares, collection=collection, embedding=embedding
        ),
        encoding="utf-8",
    )
    return file


async def index(file: Path) -> None:
    await Pipeline.load(file).run(options=RunOptions(workers=0))


def _limit_files(count: int) -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


class ServerProcess:
    """`ragflow-config serve` in a child process, on a free loopback port.

    Waits for the line that announces the address; every line of its stderr
    is kept in ``lines``.
    """

    def __init__(
        self, *args: str, env: dict[str, str] | None = None, open_files: int | None = None
    ) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragflow_config.cli", "serve", "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, **(env or {})},
            # `ulimit -n open_files` in the server only
            preexec_fn=None if open_files is None else partial(_limit_files, open_files),
        )
        self.lines: list[str] = []
        self.url = ""
        self._new_line = threading.Condition()
        self._announced = threading.Event()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self._announced.wait(timeout=120) or not self.url:
            self.process.kill()
            self.process.wait()
            raise AssertionError("the server did not start:\n" + self.log)

    def _read(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            with self._new_line:
                self.lines.append(line)
                self._new_line.notify_all()
            if line.startswith("serving ") and " on http://" in line and not self.url:
                self.url = line.split(" on ", 1)[1].split(" ", 1)[0]
                self._announced.set()
        self._announced.set()

    def wait_for_line(self, text: str, timeout: float = 60) -> bool:
        """Whether a line of stderr holds ``text`` (waiting for it, at most ``timeout`` s)."""
        with self._new_line:
            return self._new_line.wait_for(
                lambda: any(text in line for line in self.lines), timeout=timeout
            )

    @property
    def log(self) -> str:
        return "".join(self.lines)

    def access_lines(self) -> list[str]:
        return [line for line in self.lines if "ragflow_config.server.access" in line]

    def stop(self) -> int:
        """SIGTERM, then the exit code once the drain is over."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        code = self.process.wait(timeout=60)
        self._reader.join(timeout=10)
        return code

    def __enter__(self) -> ServerProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        self._reader.join(timeout=10)


@contextlib.asynccontextmanager
async def held_embeddings(
    folder: Path,
) -> AsyncIterator[tuple[Path, EmbeddingServer, threading.Event]]:
    """An indexed pipeline whose embedding service, from now on, holds each request until the gate opens."""
    embeddings = EmbeddingServer()
    embeddings.start()
    gate = threading.Event()
    try:
        model = (
            "{type: openai_compatible, parameters: {base_url: '"
            + embeddings.url
            + "', model: fake, dimensions: 8}}"
        )
        file = write_pipeline(folder, embedding=model)
        await index(file)
        embeddings.reply = lambda number, body: (gate.wait(timeout=60), None)[1]
        yield file, embeddings, gate
    finally:
        gate.set()
        embeddings.stop()


def tool_call(client: httpx.Client, arguments: dict[str, object]) -> dict[str, object]:
    """One JSON-RPC tools/call over MCP's streamable HTTP (the stateless server needs no session)."""
    answer = client.post(
        "/mcp",
        headers={"Accept": "application/json, text/event-stream"},
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "search_knowledge", "arguments": arguments},
        },
    )
    assert answer.status_code == 200, answer.text
    result: dict[str, object] = answer.json()["result"]
    return result
