"""The attacks of issue 35 on `ragflow-config serve`, repeated on loopback: each refused or bounded.

    python bench/attacks.py              # ~2 min on 2 cores; prints one row per attack

Starts a real server (the two-tenant corpus of tests/server, hashing model,
Qdrant local; the hung-store row on an embedded PostgreSQL + pgvector that
the bench freezes with SIGSTOP) and, for each attack of the issue, reports
what the server did and the number the issue sets for it:

1. a header flood (3 connections sending 200 MB of unfinished headers):
   the server's RSS, peak against start (goal: within 50 MB);
2. 300 idle and slow connections open: /healthz latency (goal: < 100 ms),
   and the same under ``ulimit -n 256`` (the cap then refuses the excess);
3. DNS rebinding (Host and Origin of attacker.example): a JSON 403;
4. a hung store: the answer's time against the deadline (goal: deadline + 1 s);
5. a client gone mid-upload: no 500, no traceback;
6. the framework's own errors: every body JSON, no redirect built from Host;
7. SIGTERM over stdio: exit 0 after the drain;
8. a 503 body: no store address;
9. the input nits: each refused with 4xx.

Every request goes to 127.0.0.1 only; every loop is bounded.
"""

from __future__ import annotations

import asyncio
import json
import os
import resource
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from _postgres import restartable_postgres_server  # noqa: E402
from server._serving import write_pipeline  # noqa: E402

from ragflow_config.pipeline import Pipeline, RunOptions  # noqa: E402

SEARCH = "/v1/knowledge-bases/tutorial/search"
rows: list[tuple[str, str, str, str]] = []


def report(attack: str, seen: str, goal: str, met: bool) -> None:
    rows.append((attack, seen, goal, "met" if met else "**not met**"))
    print(f"{attack}: {seen} (goal: {goal}) {'met' if met else 'NOT MET'}", flush=True)


class Server:
    """`ragflow-config serve` in a child process; ``rss()`` reads its resident memory."""

    def __init__(self, file: Path, *args: str, nofile: int | None = None) -> None:
        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        self.process = subprocess.Popen(
            [sys.executable, "-m", "ragflow_config.cli", "serve", str(file), "--port", "0", *args],
            stdin=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            preexec_fn=limit,
        )
        assert self.process.stderr is not None
        self.log: list[str] = []
        line = ""
        while not (line.startswith("serving ") and " on http://" in line):
            line = self.process.stderr.readline()
            if not line:
                raise RuntimeError("the server did not start:\n" + "".join(self.log))
            self.log.append(line)
        self.url = line.split(" on ", 1)[1].split(" ", 1)[0]
        self.port = int(self.url.rsplit(":", 1)[1])
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            self.log.append(line)

    def rss(self) -> int:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise RuntimeError("no VmRSS")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        return self.process.wait(timeout=60)


def connect(port: int) -> socket.socket:
    return socket.create_connection(("127.0.0.1", port), timeout=30)


def header_flood(server: Server) -> None:
    start = server.rss()
    peak = start
    stop = threading.Event()

    def flood() -> None:
        sent = 0
        while sent < 200 * 1024 * 1024 and not stop.is_set():
            try:
                with connect(server.port) as sock:
                    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Flood: ")
                    while sent < 200 * 1024 * 1024:
                        sock.sendall(b"a" * 65536)
                        sent += 65536
            except OSError:
                continue  # refused and closed: connect again, as a flood would

    threads = [threading.Thread(target=flood) for _ in range(3)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while any(t.is_alive() for t in threads) and time.monotonic() < deadline:
        peak = max(peak, server.rss())
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join()
    grown = (peak - start) / 1e6
    report(
        "1. header flood, 3 x 200 MB",
        f"RSS {start / 1e6:.0f} MB at start, peak {peak / 1e6:.0f} MB (+{grown:.1f} MB)",
        "within 50 MB",
        grown <= 50,
    )


def healthz_latency(url: str, tries: int = 20) -> tuple[list[float], int]:
    times, failures = [], 0
    for _ in range(tries):
        started = time.perf_counter()
        try:
            ok = httpx.get(url + "/healthz", timeout=5).status_code == 200
        except httpx.HTTPError:
            ok = False
        times.append((time.perf_counter() - started) * 1000)
        failures += not ok
        time.sleep(0.05)
    return times, failures


def idle_and_slow(file: Path, nofile: int | None) -> None:
    server = Server(file, nofile=nofile)
    held: list[socket.socket] = []
    refused = 0
    try:
        for number in range(300):
            try:
                sock = connect(server.port)
            except OSError:
                refused += 1
                continue
            if number % 2:  # slow: a head that never ends, a byte at a time
                sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            held.append(sock)
        times, failures = healthz_latency(server.url)
        median, worst = statistics.median(times), max(times)
        seen = (
            f"/healthz median {median:.1f} ms, max {worst:.1f} ms, {failures} of {len(times)} "
            f"refused (503) while {len(held)} are held"
        )
        if nofile is None:
            report(
                "2. 300 idle and slow connections (default ulimit -n)",
                seen,
                "< 100 ms",
                worst < 100 and failures == 0,
            )
            return
        # Past the cap, the server refuses until the idle (5 s) and slow (10 s) ones are closed.
        time.sleep(11)
        times, late_failures = healthz_latency(server.url)
        emfile = any("Too many open files" in line for line in server.log)
        report(
            f"2. 300 idle and slow connections (ulimit -n {nofile}, so at most "
            f"{nofile - 128} connections)",
            f"{seen}; 11 s later, once they are timed out: median "
            f"{statistics.median(times):.1f} ms, max {max(times):.1f} ms, {late_failures} refused; "
            + ("EMFILE logged" if emfile else "no EMFILE"),
            "no EMFILE; refused in JSON past the cap, then < 100 ms",
            not emfile and late_failures == 0 and max(times) < 100,
        )
    finally:
        for sock in held:
            sock.close()
        server.stop()


def rebinding(server: Server) -> None:
    answer = httpx.post(
        server.url + SEARCH,
        headers={
            "Host": f"attacker.example:{server.port}",
            "Origin": f"http://attacker.example:{server.port}",
            "Content-Type": "text/plain",
        },
        content=b'{"query": "file"}',
    )
    body = answer.json()
    report(
        "3. DNS rebinding (Host, Origin attacker.example, text/plain)",
        f"{answer.status_code} {body['error']['message'][:60]!r}",
        "a JSON 403",
        answer.status_code == 403 and "error" in body,
    )


def disconnect_mid_upload(server: Server) -> None:
    with connect(server.port) as sock:
        sock.sendall(
            f"POST {SEARCH} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            'Content-Length: 1000\r\n\r\n{"query": '.encode()
        )
    time.sleep(0.5)
    log = "".join(server.log)
    report(
        "5. client gone mid-upload",
        "access line 499" if f'"POST {SEARCH}" 499' in log else "no 499 line",
        "one INFO line, no 500, no traceback",
        "Traceback" not in log and " 500 " not in log,
    )


def framework_errors(server: Server) -> None:
    checks = {
        "malformed request": (b"NOT HTTP\r\n\r\n", 400),
        "Host of another name": (
            b"GET /mcp HTTP/1.1\r\nHost: evil\r\nConnection: close\r\n\r\n",
            403,
        ),
        "POST /mcp/ (no redirect)": (
            b"POST /mcp/ HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n"
            b"Connection: close\r\n\r\n",
            404,
        ),
        "GET /mcp (no endless stream)": (
            b"GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
            405,
        ),
    }
    seen, all_json = [], True
    for name, (request, status) in checks.items():
        with connect(server.port) as sock:
            sock.sendall(request)
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        head, _, body = answer.partition(b"\r\n\r\n")
        got = int(head.split()[1])
        is_json = b"application/json" in head.lower() and "error" in json.loads(body)
        all_json &= is_json and got == status and b"location:" not in head.lower()
        seen.append(f"{name} {got}{' JSON' if is_json else ' NOT JSON'}")
    report("6. the framework's own errors", "; ".join(seen), "each JSON", all_json)


def input_nits(server: Server) -> None:
    cases = {
        'top_k "3"': {"query": "file", "top_k": "3"},
        "top_k true": {"query": "file", "top_k": True},
        "blank query": {"query": "   "},
    }
    seen = []
    ok = True
    with httpx.Client(base_url=server.url) as client:
        for name, body in cases.items():
            status = client.post(SEARCH, json=body).status_code
            seen.append(f"{name} {status}")
            ok &= status == 400
        nan = client.post(
            SEARCH,
            content=b'{"query": "file", "score_threshold": NaN}',
            headers={"Content-Type": "application/json"},
        )
        seen.append(f"NaN {nan.status_code}")
        plain = client.post(SEARCH, content=b'{"query": "file"}')
        seen.append(f"no JSON Content-Type {plain.status_code}")
        long_name = client.post(f"/v1/knowledge-bases/{'n' * 5000}/search", json={"query": "x"})
        seen.append(f"5,000-character name echoed in {len(long_name.text)} bytes")
        ok &= nan.status_code == 400 and plain.status_code == 415 and len(long_name.text) < 500
    report("9. input nits", "; ".join(seen), "each 4xx", ok)


async def hung_store(root: Path) -> None:
    with restartable_postgres_server() as postgres:
        os.environ["RAGFLOW_BENCH_HUNG_DSN"] = postgres.dsn
        store = "{type: pgvector, parameters: {dsn_env: RAGFLOW_BENCH_HUNG_DSN, timeout: 60}}"
        file = write_pipeline(root / "hung", store=store)
        await Pipeline.load(file).run(options=RunOptions(workers=0))
        server = Server(file, "--store-timeout-seconds", "2")
        try:
            postmaster = int((postgres.data / "postmaster.pid").read_text().split()[0])
            frozen = [postmaster] + [
                int(pid)
                for pid in os.listdir("/proc")
                if pid.isdigit() and _parent(int(pid)) == postmaster
            ]
            httpx.post(server.url + SEARCH, json={"query": "file"}, timeout=60)
            for pid in frozen:
                os.kill(pid, signal.SIGSTOP)
            try:
                started = time.perf_counter()
                answer = httpx.post(server.url + SEARCH, json={"query": "file"}, timeout=120)
                took = time.perf_counter() - started
            finally:
                for pid in frozen:
                    os.kill(pid, signal.SIGCONT)
            message = answer.json()["error"]["message"]
            report(
                "4. a hung store (PostgreSQL SIGSTOPped), deadline 2 s",
                f"{answer.status_code} after {took:.2f} s: {message!r}",
                "503 within the deadline + 1 s",
                answer.status_code == 503 and took <= 3.0,
            )
            report(
                "8. a 503's body",
                "names the store's address" if "127.0.0.1" in message else "no address",
                "no internal address",
                "127.0.0.1" not in message,
            )
        finally:
            server.stop()


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1


def stdio_sigterm(file: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "ragflow_config.cli", "serve", "--stdio", str(file)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    time.sleep(3)  # the stores are open
    process.send_signal(signal.SIGTERM)
    try:
        code = process.wait(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        code = process.wait()
    report("7. SIGTERM over stdio", f"exit {code}", "exit 0 after the drain", code == 0)


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="ragflow-attacks-") as folder:
        root = Path(folder)
        file = write_pipeline(root / "qdrant")
        await Pipeline.load(file).run(options=RunOptions(workers=0))
        server = Server(file)
        try:
            header_flood(server)
            rebinding(server)
            disconnect_mid_upload(server)
            framework_errors(server)
            input_nits(server)
        finally:
            server.stop()
        idle_and_slow(file, None)
        idle_and_slow(file, 256)
        stdio_sigterm(file)
        await hung_store(root)
    print()
    print("| attack | what the server did | goal | verdict |")
    print("| --- | --- | --- | --- |")
    for row in sorted(rows):
        print("| " + " | ".join(row) + " |")


if __name__ == "__main__":
    asyncio.run(main())
