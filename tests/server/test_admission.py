"""Admission control (issue 53, fall 2): each client's share, a bounded queue, 429 past it,
and a server that slow clients cannot lock out, with few files to spare.

The class is tested on its own event loop; the server through real processes,
with clients told apart by their loopback source address (127.0.0.x).
"""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest

from ragflow_config.server._admission import Admission, AdmissionLimits, Refused

from ._serving import ServerProcess, held_embeddings

SEARCH = "/v1/knowledge-bases/tutorial/search"
QUERY = {"query": "read a file line by line", "top_k": 3}


def _admission(per_client: int = 2, running: int = 1, queued: int = 4) -> Admission:
    return Admission(AdmissionLimits(per_client, running, queued, wait_seconds=60))


async def test_a_client_past_its_share_is_refused_and_a_freed_place_goes_to_the_lighter() -> None:
    admission = _admission(per_client=3, running=2, queued=4)
    await admission.enter("a")
    await admission.enter("a")
    waiting = asyncio.ensure_future(admission.enter("a"))
    await asyncio.sleep(0)
    with pytest.raises(Refused, match="3 requests in flight") as refused:
        await admission.enter("a")
    assert refused.value.reason == "client"
    other = asyncio.ensure_future(admission.enter("b"))
    await asyncio.sleep(0)
    assert (admission.running, admission.queued) == (2, 2)
    admission.leave("a")
    for _ in range(5):  # the place passes through wait_for's own task
        await asyncio.sleep(0)
    # a still runs one and b none: b goes first although a waited longer
    assert other.done() and not waiting.done()
    admission.leave("b")
    await waiting
    admission.leave("a")
    admission.leave("a")
    assert (admission.running, admission.queued) == (0, 0)


async def test_the_queue_is_bounded_and_a_wait_past_the_deadline_is_refused() -> None:
    admission = Admission(AdmissionLimits(per_client=9, running=1, queued=1, wait_seconds=0.05))
    await admission.enter("a")
    waiting = asyncio.ensure_future(admission.enter("b"))
    await asyncio.sleep(0)
    with pytest.raises(Refused) as full:
        await admission.enter("c")
    assert full.value.reason == "queue"
    with pytest.raises(Refused) as waited:
        await waiting
    assert waited.value.reason == "wait"
    assert (admission.running, admission.queued) == (1, 0)
    waiting = asyncio.ensure_future(admission.enter("b"))  # a cancelled waiter leaves no trace
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    admission.leave("a")
    assert (admission.running, admission.queued) == (0, 0)


def _client(server: ServerProcess, source: str) -> httpx.Client:
    transport = httpx.HTTPTransport(local_address=source)
    return httpx.Client(base_url=server.url, transport=transport, timeout=120)


async def test_past_a_clients_share_or_the_queue_the_answer_is_429_with_retry_after(
    tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    async with held_embeddings(tmp_path) as (file, embeddings, gate):
        server = server_process(
            str(file),
            *("--max-searches-per-client", "2", "--max-searches", "2"),
            *("--max-queued-searches", "1", "--store-timeout-seconds", "120"),
        )
        seen = len(embeddings.requests)
        answers: list[httpx.Response] = []

        def search(source: str) -> None:
            with _client(server, source) as client:
                answers.append(client.post(SEARCH, json=QUERY))

        held = [threading.Thread(target=search, args=("127.0.0.1",)) for _ in range(2)]
        for thread in held:
            thread.start()
        with embeddings._state:  # both run: each waits on the embedding service
            assert embeddings._state.wait_for(
                lambda: len(embeddings.requests) >= seen + 2, timeout=120
            )
        with _client(server, "127.0.0.1") as client:
            third = client.post(SEARCH, json=QUERY)
            assert client.get("/healthz").status_code == 200  # never queued
        assert third.status_code == 429, third.text
        assert third.headers["retry-after"] == "1"
        assert "2 requests in flight" in third.json()["error"]["message"]
        queued = threading.Thread(target=search, args=("127.0.0.2",))  # waits for a place
        queued.start()
        with _client(server, "127.0.0.3") as client:
            while "\nragflow_admission_queued 1.0\n" not in client.get("/metrics").text:
                time.sleep(0.05)  # until the other client waits in the queue
            busy = client.post(SEARCH, json=QUERY)
        assert busy.status_code == 429, busy.text
        assert "requests are waiting" in busy.json()["error"]["message"]
        gate.set()
        for thread in [*held, queued]:
            thread.join(timeout=120)
    assert [answer.status_code for answer in answers] == [200, 200, 200]
    assert server.wait_for_line("refused a request: ")
    assert "Traceback" not in server.log


def test_slow_clients_cannot_lock_healthz_out_with_few_files(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    """Slowloris under `ulimit -n 256` (issue 53: 300 slow connections, /healthz 503 on
    every probe): 300 connections that send a head a byte at a time, opened again as the
    server closes them, while /healthz is probed; bounded in connections and in time."""
    server = server_process(str(indexed), "--header-seconds", "30", open_files=256)
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    stop = threading.Event()
    opened = 0

    def slowloris() -> None:
        nonlocal opened
        held: list[socket.socket] = []
        while not stop.is_set() and opened < 3000:
            while len(held) < 300 and opened < 3000:
                try:
                    sock = socket.create_connection((host, int(port)), timeout=5)
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-a: ")
                except OSError:
                    break
                held.append(sock)
                opened += 1
            for sock in list(held):  # a byte each; a closed one is opened again
                try:
                    sock.sendall(b"a")
                except OSError:
                    held.remove(sock)
                    sock.close()
            time.sleep(0.2)
        for sock in held:
            sock.close()

    attacker = threading.Thread(target=slowloris)
    attacker.start()
    try:
        while opened < 300:
            time.sleep(0.05)
        probes = []
        for _ in range(15):
            with httpx.Client(base_url=server.url, timeout=30) as client:
                probes.append(client.get("/healthz").status_code)
            time.sleep(0.1)
    finally:
        stop.set()
        attacker.join(timeout=60)
    assert probes == [200] * 15
    assert "Traceback" not in server.log


def test_a_light_client_beside_six_heavy_ones_is_answered_not_refused(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    """Issue 53's fairness probe with the server's default limits: six clients, each from
    its own address over 4 connections, loop on 2,000-character queries with top_k 50; a
    seventh's short searches are all answered, none refused. (Its latency against its
    unloaded latency is bench/serve_fairness.py's to measure, not a test's.)"""
    server = server_process(str(indexed))
    stop = threading.Event()
    heavy_answers: list[int] = []
    long_query = {"query": ("read a file line by line and sort the records " * 50)[:2000]}

    def heavy(source: str) -> None:
        with _client(server, source) as client:
            while not stop.is_set():
                answer = client.post(SEARCH, json={**long_query, "top_k": 50})
                heavy_answers.append(answer.status_code)

    threads = [
        threading.Thread(target=heavy, args=(f"127.0.0.{2 + number}",))
        for number in range(6)
        for _ in range(4)
    ]
    for thread in threads:
        thread.start()
    try:
        with _client(server, "127.0.0.8") as client:
            while len(heavy_answers) < 24:  # the load under way
                time.sleep(0.05)
            light = [client.post(SEARCH, json={"query": "logging", "top_k": 3}) for _ in range(10)]
    finally:
        stop.set()
        for thread in threads:
            thread.join(timeout=120)
    assert [answer.status_code for answer in light] == [200] * 10, light[-1].text
    assert all(answer.json()["hits"] for answer in light)
    assert set(heavy_answers) <= {200, 429}  # a heavy client past its share may be told to wait
    assert "Traceback" not in server.log
