"""A real S3 REST server on loopback (moto's ThreadedMotoServer) behind a small HTTP proxy
that counts the requests a source makes and can break them.

The proxy forwards every request as it came; it can cap a listing's page size
(so six objects list in three pages) and answer 503 to every page after the first,
as an S3 endpoint does when it is overloaded. What it counts is what went over
the wire, not what the code under test says it did.
"""

from __future__ import annotations

import http.client
import logging
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import boto3
from moto.server import ThreadedMotoServer

logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request otherwise
_HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "proxy-connection", "upgrade"}


@dataclass
class Requests:
    """What the proxy saw, and how it misbehaves."""

    seen: list[tuple[str, str]] = field(default_factory=list)  # (method, path?query)
    page_size: int | None = None
    fail_after_first_page: bool = False  # every listing page after the first answers 503
    lock: threading.Lock = field(default_factory=threading.Lock)

    def object_gets(self) -> int:
        """GETs of an object (a key after the bucket), not listings."""
        return sum(
            1
            for method, target in self.seen
            if method == "GET"
            and "list-type" not in target
            and urlsplit(target).path.count("/") >= 2
        )

    def listings(self) -> int:
        return sum(1 for method, target in self.seen if method == "GET" and "list-type" in target)

    def clear(self) -> None:
        with self.lock:
            self.seen.clear()


class S3Server:
    """moto on 127.0.0.1, reached by sources through the proxy at ``endpoint``."""

    def __init__(self) -> None:
        self.moto = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.moto.start()
        host, port = self.moto.get_host_and_port()
        self.backend = f"http://{host}:{port}"
        # moto keeps its buckets in the process, across servers: each test starts empty.
        urllib.request.urlopen(
            urllib.request.Request(f"{self.backend}/moto-api/reset", method="POST"), timeout=30
        ).close()
        self.requests = Requests()
        self.proxy = ThreadingHTTPServer(("127.0.0.1", 0), _handler(host, port, self.requests))
        self.proxy.daemon_threads = True
        threading.Thread(target=self.proxy.serve_forever, daemon=True).start()
        self.endpoint = f"http://127.0.0.1:{self.proxy.server_address[1]}"
        # The test's own writes go straight to moto, uncounted.
        self.client: Any = boto3.client(
            "s3",
            endpoint_url=self.backend,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )

    def stop(self) -> None:
        self.proxy.shutdown()
        self.proxy.server_close()
        self.moto.stop()


def _handler(host: str, port: int, requests: Requests) -> type[BaseHTTPRequestHandler]:
    class Forward(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _forward(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            target = self.path
            with requests.lock:
                requests.seen.append((self.command, target))
            parts = urlsplit(target)
            query = parse_qsl(parts.query, keep_blank_values=True)
            if self.command == "GET" and any(k == "list-type" for k, _ in query):
                later_page = any(k == "continuation-token" for k, _ in query)
                if later_page and requests.fail_after_first_page:
                    self._answer(503, b"<Error><Code>SlowDown</Code></Error>", {})
                    return
                if requests.page_size is not None:
                    query = [(k, v) for k, v in query if k != "max-keys"]
                    query.append(("max-keys", str(requests.page_size)))
                    target = parts.path + "?" + urlencode(query)
            connection = http.client.HTTPConnection(host, port, timeout=30)
            headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
            connection.request(self.command, target, body=body, headers=headers)
            response = connection.getresponse()
            data = response.read()
            self._answer(
                response.status,
                data,
                {k: v for k, v in response.getheaders() if k.lower() not in _HOP_BY_HOP},
            )
            connection.close()

        def _answer(self, status: int, data: bytes, headers: dict[str, str]) -> None:
            self.send_response(status)
            for key, value in headers.items():
                if key.lower() != "content-length":
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Forward


def served() -> Iterator[S3Server]:
    server = S3Server()
    try:
        yield server
    finally:
        server.stop()
