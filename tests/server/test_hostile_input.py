"""The probe of issue 53, against real `serve` processes: hostile bodies are 4xx, never a 500
or a frozen server; stdio answers every request it read and refuses what is no message.

Nothing here asserts a time: "the server stayed free" is seen as other requests
answered while a costly one runs, or a deadline that fired.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

from ragflow_config._search_input import (
    MAX_FILTER_DEPTH,
    MAX_FILTER_KEY_CHARS,
    MAX_FILTER_VALUE_CHARS,
)

from ._serving import INITIALIZE, ServerProcess

SEARCH = "/v1/knowledge-bases/tutorial/search"
JSON = {"Content-Type": "application/json"}
MCP = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


def _nested(depth: int) -> dict[str, Any]:
    inner: dict[str, Any] = {"tenant_id": "tutorial"}
    for _ in range(depth):
        inner = {"a": inner}
    return inner


HOSTILE_SEARCHES = [
    # (body, what the 400 names)
    ('{"query": "files", "score_threshold": 1' + "0" * 400 + "}", "finite number"),
    ("[" * 30_000 + "]" * 30_000, "nests over 200 levels"),
    (json.dumps({"query": "files", "filter": _nested(900)}), "nests over 200 levels"),
    (json.dumps({"query": "files", "filter": _nested(150)}), f"over {MAX_FILTER_DEPTH} levels"),
    (json.dumps({"query": "files", "filter": {"k" * 60_000: "x"}}), "a key of 60000 characters"),
    (
        json.dumps({"query": "files", "filter": {"k": "v" * (MAX_FILTER_VALUE_CHARS + 1)}}),
        f"at most {MAX_FILTER_VALUE_CHARS} are accepted",
    ),
    (json.dumps({"query": "q" * 2001}), "2001 characters; at most 2000"),
]


def test_hostile_search_bodies_are_400s_while_healthz_keeps_answering(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--max-body-bytes", str(1 << 20))
    answers: list[tuple[str, httpx.Response]] = []

    def send_all() -> None:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            for _ in range(3):
                for body, named in HOSTILE_SEARCHES:
                    answers.append((named, client.post(SEARCH, content=body, headers=JSON)))

    senders = [threading.Thread(target=send_all) for _ in range(4)]
    for sender in senders:
        sender.start()
    with httpx.Client(base_url=server.url, timeout=60) as client:
        health = []
        while any(sender.is_alive() for sender in senders):
            health.append(client.get("/healthz").status_code)
    for sender in senders:
        sender.join()
    assert health and set(health) == {200}
    assert len(answers) == 4 * 3 * len(HOSTILE_SEARCHES)
    for named, answer in answers:
        assert answer.status_code == 400, answer.text
        assert named in answer.json()["error"]["message"], answer.text
    assert "Traceback" not in server.log
    # the bounds are bounds, not a refusal of every filter
    with httpx.Client(base_url=server.url, timeout=60) as client:
        fits = {"a" * MAX_FILTER_KEY_CHARS: "x"}
        assert client.post(SEARCH, json={"query": "files", "filter": fits}).status_code == 200


JSON_RPC_SHAPES = [
    '{"method": "tools/call", "params": "x"}',
    '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": "x"}',
    '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": 3}}',
    '{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": '
    '"search_knowledge", "arguments": {"query": "files", "top_k": 1' + "0" * 400 + "}}}",
    "[" * 30_000,
    "[" * 30_000 + "]" * 30_000,
    '{"jsonrpc": "2.0", "id": [], "method": "ping"}',
    '{"jsonrpc": "2.0", "id": 7, "method": "nothing/here"}',
    "null",
]


def test_every_json_rpc_shape_over_http_is_answered_without_a_500(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--max-body-bytes", str(1 << 20))
    with httpx.Client(base_url=server.url, timeout=60) as client:
        for body in JSON_RPC_SHAPES:
            answer = client.post("/mcp", content=body, headers=MCP)
            assert answer.status_code < 500, (body[:80], answer.text)
            if answer.status_code == 200:  # a JSON-RPC error, or the tool's own refusal
                found = answer.json()
                assert "error" in found or found["result"]["isError"] is True, answer.text
    assert "Traceback" not in server.log


def test_the_query_cap_holds_on_the_ui(indexed: Path, server_process: type[ServerProcess]) -> None:
    server = server_process(str(indexed), "--ui")
    with httpx.Client(base_url=server.url, timeout=60) as client:
        page = client.get("/ui/kb/tutorial", params={"q": "file " * 1400})
    assert page.status_code == 200
    assert "7000 characters; at most 2000 are accepted" in page.text
    assert "files.md" not in page.text  # no hits


# -- stdio -----------------------------------------------------------------------

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def _call(request_id: int, query: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "search_knowledge", "arguments": {"query": query}},
    }


def _stdio(file: Path, lines: list[bytes]) -> tuple[list[dict[str, Any]], str]:
    """Every line written to a `serve --stdio`, stdin closed; its answers and its stderr."""
    server = subprocess.Popen(
        [sys.executable, "-m", "ragflow_config.cli", "serve", "--stdio", str(file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        out, err = server.communicate(b"".join(lines), timeout=300)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert server.returncode == 0, err.decode()
    return [json.loads(line) for line in out.splitlines()], err.decode()


def _line(message: object) -> bytes:
    return json.dumps(message).encode() + b"\n"


def test_stdio_answers_every_request_read_before_its_input_ends(indexed: Path) -> None:
    answers, log = _stdio(
        indexed,
        [
            _line(INITIALIZE),
            _line(INITIALIZED),
            _line(_call(2, "read a file")),
            _line(_call(3, "sorting records")),
        ],
    )
    by_id = {answer["id"]: answer for answer in answers}
    assert set(by_id) == {1, 2, 3}, answers
    assert by_id[2]["result"]["isError"] is False, by_id[2]
    assert by_id[3]["result"]["isError"] is False, by_id[3]
    assert "Traceback" not in log


def test_stdio_refuses_a_32_mib_line_and_what_is_no_message_then_goes_on(indexed: Path) -> None:
    answers, log = _stdio(
        indexed,
        [
            _line(INITIALIZE),
            _line(INITIALIZED),
            b'{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": "'
            + b"x" * (32 << 20)
            + b'"}\n',
            b'{"method": "tools/call", "params": "x"}\n',
            b'{"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": "x"}\n',
            b"[" * 30_000 + b"\n",
            b"not json\n",
            _line(_call(2, "read a file")),
        ],
    )
    # The refusals come in the order of their lines; the requests' answers when ready.
    refusals = [answer for answer in answers if "error" in answer]
    assert [refusal["id"] for refusal in refusals] == [None, None, 5, None, None], answers
    overlong, no_version, bad_params, deep, not_json = refusals
    assert overlong["error"]["code"] == -32600
    assert "over 65536 bytes" in overlong["error"]["message"]
    assert no_version["error"]["code"] == bad_params["error"]["code"] == -32600
    assert deep["error"]["code"] == not_json["error"]["code"] == -32700
    results = {answer["id"]: answer["result"] for answer in answers if "result" in answer}
    assert set(results) == {1, 2} and results[2]["isError"] is False, answers
    assert "Traceback" not in log
