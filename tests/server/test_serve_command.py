"""`ragflow-config serve`'s options, through `main` in this process.

`tests/server`'s other tests start the server as a child process, where
mutation testing cannot see the command (issue 27, item 4). Here `main` serves
in the test's own thread, as the command does; a second thread makes the
requests once the address is announced, then sends this process SIGTERM, which
the server handles by draining and returning.
"""

from __future__ import annotations

import asyncio
import io
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from _postgres import free_port

from ragflow_config.cli import main

from ._serving import TOKEN, index, write_pipeline

ACCESS_LOGGER = "ragflow_config.server.access"
SEARCH = "/v1/knowledge-bases/howto/search"
ORIGIN = "https://app.example.com"


class _Stderr(io.StringIO):
    """The command's stderr, telling a waiting thread when the address is announced."""

    def __init__(self) -> None:
        super().__init__()
        self.changed = threading.Event()
        self.url = ""

    def write(self, text: str) -> int:
        if text.startswith("serving ") and " on http://" in text:
            self.url = text.split(" on ", 1)[1].split(" ", 1)[0]
            self.changed.set()
        return super().write(text)


def serve_and_call(
    argv: list[str],
    monkeypatch: pytest.MonkeyPatch,
    requests: Callable[[httpx.Client], None],
) -> tuple[int, str]:
    """Run `main(argv)`; once it serves, `requests` runs against it, then SIGTERM stops it.

    Returns main's exit code and its stderr.
    """
    stderr = _Stderr()
    monkeypatch.setattr(sys, "stderr", stderr)
    failures: list[BaseException] = []

    def client() -> None:
        stderr.changed.wait(timeout=120)
        if not stderr.url:
            return  # main ended without serving: its exit code and stderr say why
        try:
            with httpx.Client(base_url=stderr.url.replace("0.0.0.0", "127.0.0.1")) as http:
                requests(http)
        except BaseException as exc:  # reported by the test, after the server stops
            failures.append(exc)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)

    caller = threading.Thread(target=client)
    caller.start()
    try:
        code = main(argv)
    finally:
        stderr.changed.set()  # a main that returned without serving frees the caller
        caller.join()
    if failures:
        raise failures[0]
    return code, stderr.getvalue()


@pytest.fixture
def indexed(tmp_path: Path) -> Path:
    file = write_pipeline(tmp_path)
    asyncio.run(index(file))
    return file


@pytest.fixture(autouse=True)
def access_logger_level() -> Iterator[None]:
    """`serve` turns the access log on for the process; put it back for the next test."""
    logger = logging.getLogger(ACCESS_LOGGER)
    level = logger.level
    yield
    logger.setLevel(level)


def test_serve_applies_token_kb_limits_cors_and_query_logging(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("MY_SERVE_TOKEN", TOKEN)
    port = free_port()
    seen: dict[str, object] = {}

    def requests(http: httpx.Client) -> None:
        seen["no token"] = http.get("/v1/knowledge-bases").status_code
        http.headers["Authorization"] = f"Bearer {TOKEN}"
        listed = http.get("/v1/knowledge-bases").json()
        seen["served"] = [kb["name"] for kb in listed["knowledge_bases"]]
        seen["one character"] = http.post(SEARCH, json={"query": "z"}).status_code
        seen["two characters"] = http.post(SEARCH, json={"query": "zz"}).status_code
        body = b'{"query": "z"}'
        json_type = {"Content-Type": "application/json"}
        seen["1,024 bytes"] = http.post(
            SEARCH, content=body.ljust(1024), headers=json_type
        ).status_code
        seen["1,025 bytes"] = http.post(
            SEARCH, content=body.ljust(1025), headers=json_type
        ).status_code
        preflight = http.options(
            SEARCH,
            headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST"},
        )
        seen["allowed origin"] = preflight.headers.get("access-control-allow-origin")

    code, stderr = serve_and_call(
        [
            "serve",
            str(indexed),
            "--host",
            "0.0.0.0",  # reachable from elsewhere, with a token: no warning
            "--port",
            str(port),
            "--token-env",
            "MY_SERVE_TOKEN",
            "--kb",
            "howto",
            "--cors-origin",
            ORIGIN,
            # The floors (a value below one exits 2, naming the flag): 1,024 bytes, 1 character.
            "--max-body-bytes",
            "1024",
            "--max-query-chars",
            "1",
            "--drain-seconds",
            "0",
            "--log-queries",
        ],
        monkeypatch,
        requests,
    )

    assert code == 0
    assert stderr.startswith(f"serving howto on http://0.0.0.0:{port} ")
    assert seen == {
        "no token": 401,
        "served": ["howto"],
        "one character": 200,
        "two characters": 400,
        "1,024 bytes": 200,
        "1,025 bytes": 413,
        "allowed origin": ORIGIN,
    }
    access = [r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER]
    assert any(line.endswith(' query="z"') for line in access), access
    assert not any("without a token" in r.getMessage() for r in caplog.records)
    # The access log is turned on alone, not every library's INFO lines (httpx's among them).
    assert not [r for r in caplog.records if r.levelno == logging.INFO and r.name != ACCESS_LOGGER]
    # The drain's bound, at its floor of 0 s, as the SIGTERM warning states it.
    assert "draining requests in flight (at most 0s)" in caplog.text


def test_serve_without_a_token_off_loopback_warns_and_no_access_log_keeps_quiet(
    indexed: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("RAGFLOW_SERVE_TOKEN", raising=False)
    statuses: list[int] = []

    def requests(http: httpx.Client) -> None:
        statuses.append(http.post(SEARCH, json={"query": "zanzibar"}).status_code)

    code, _ = serve_and_call(
        ["serve", str(indexed), "--host", "0.0.0.0", "--port", "0", "--no-access-log"],
        monkeypatch,
        requests,
    )

    assert (code, statuses) == (0, [200])
    warnings = [r.getMessage() for r in caplog.records if r.name == "ragflow_config.server"]
    assert (
        "serving on 0.0.0.0 without a token: anyone who can reach this address can search; "
        "set RAGFLOW_SERVE_TOKEN"
    ) in warnings
    assert (
        "serving on 0.0.0.0: a client that names the server by a host name rather than an "
        "address is refused (DNS rebinding) unless the name is given with --allowed-host"
    ) in warnings
    assert not [r for r in caplog.records if r.name == ACCESS_LOGGER]
