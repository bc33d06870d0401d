"""A real HTTP server on 127.0.0.1 that answers JSON POSTs, for the tests of HTTP clients.

A subclass decides each reply in ``answer``; the OpenAI-compatible embedding
and chat tests each program one (``embedding_http/_server.py``,
``model/_server.py``).
"""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar

_Server = TypeVar("_Server", bound="JSONServer")


@dataclass
class Reply:
    status: int
    body: Any  # JSON-able, or raw bytes sent as they are
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


def error_body(message: str) -> dict[str, Any]:
    """An error as OpenAI's API words it."""
    return {"error": {"message": message, "type": "invalid_request_error"}}


def fake_vector(content: Any, length: int = 8) -> list[float]:
    """The fake servers' vector for an input: a text's, or a JSON content part's, digest."""
    key = content if isinstance(content, str) else json.dumps(content, sort_keys=True)
    digest = hashlib.sha256(key.encode()).digest()
    return [digest[i % len(digest)] / 255 for i in range(length)]


class JSONServer:
    """Serves on a free port from ``start()`` to ``stop()``, one thread per request."""

    def __init__(self) -> None:
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._http.daemon_threads = True

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_port}/v1"

    def start(self) -> None:
        threading.Thread(target=self._http.serve_forever, args=(0.05,), daemon=True).start()

    def stop(self) -> None:
        self._http.shutdown()
        self._http.server_close()

    def __enter__(self: _Server) -> _Server:
        self.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        raise NotImplementedError

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                headers = {name.lower(): value for name, value in self.headers.items()}
                reply = server.answer(self.path, headers, json.loads(raw))
                payload = (
                    reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                )
                try:
                    self.send_response(reply.status)
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client timed out
                    pass

        return Handler
