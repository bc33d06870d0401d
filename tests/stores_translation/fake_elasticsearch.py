"""A local HTTP server standing in for Elasticsearch at the client's transport boundary.

It records every request the official client really sends and answers with
responses a test scripts, so a test can assert the wire JSON and exercise the
client's own response handling (product check, status-to-exception mapping).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-cased names
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def ndjson(self) -> list[Any]:
        return [json.loads(line) for line in self.body.splitlines() if line.strip()]


Reply = tuple[int, Any]  # status, JSON body (None for no body)


def not_found(index: str) -> Reply:
    """ES's answer for an index that does not exist."""
    reason = f"no such index [{index}]"
    error = {"type": "index_not_found_exception", "reason": reason, "index": index}
    return 404, {"error": {"root_cause": [error], **error}, "status": 404}


class FakeElasticsearch:
    """Answers with ``respond(request)``; ``product_header=False`` impersonates another server."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self.respond: Callable[[Request], Reply] = lambda request: (200, {})
        self.product_header = True
        fake = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    method=self.command,
                    path=parts.path,
                    query=dict(parse_qsl(parts.query)),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length),
                )
                fake.requests.append(request)
                status, body = fake.respond(request)
                payload = b"" if body is None else json.dumps(body).encode()
                self.send_response(status)
                self.send_header(
                    "Content-Type", "application/vnd.elasticsearch+json;compatible-with=9"
                )
                if fake.product_header:
                    self.send_header("X-Elastic-Product", "Elasticsearch")
                self.send_header(
                    "Content-Length", "0" if self.command == "HEAD" else str(len(payload))
                )
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)

            do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_one

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_port}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()


class Documents:
    """A ``respond`` that keeps indexes of documents: create, exists, and get, index,
    delete by id, answered as Elasticsearch does (realtime GET, 404 bodies and all)."""

    def __init__(self) -> None:
        self.indexes: dict[str, dict[str, Any]] = {}  # index -> id -> _source
        self.mappings: dict[str, Any] = {}  # index -> the mappings it was created with

    def __call__(self, request: Request) -> Reply:
        # Split before decoding: an id may hold an encoded '/'.
        index, kind, _id = [*map(unquote, request.path.lstrip("/").split("/", 2)), "", ""][:3]
        if not kind:
            if request.method == "HEAD":
                return (200 if index in self.indexes else 404), None
            if request.method == "PUT":
                if index in self.indexes:
                    return 400, _error("resource_already_exists_exception", index)
                self.indexes[index] = {}
                self.mappings[index] = request.json().get("mappings")
                return 200, {"acknowledged": True, "index": index}
        if kind != "_doc" or not _id:
            raise AssertionError(f"unexpected request {request.method} {request.path}")
        found = {"_index": index, "_id": _id}
        if request.method in {"PUT", "POST"}:  # ES creates a missing index (unmapped) here
            documents = self.indexes.setdefault(index, {})
            result = "updated" if _id in documents else "created"
            documents[_id] = request.json()
            return (200 if result == "updated" else 201), {**found, "result": result}
        if index not in self.indexes:
            return not_found(index)
        documents = self.indexes[index]
        if request.method == "GET":
            if _id not in documents:
                return 404, {**found, "found": False}
            source = documents[_id]
            wanted = request.query.get("_source")
            if wanted:
                source = {k: v for k, v in source.items() if k in wanted.split(",")}
            return 200, {**found, "found": True, "_source": source}
        if request.method == "DELETE":
            if documents.pop(_id, None) is None:
                return 404, {**found, "result": "not_found"}
            return 200, {**found, "result": "deleted"}
        raise AssertionError(f"unexpected request {request.method} {request.path}")


def _error(kind: str, index: str) -> dict[str, Any]:
    error = {"type": kind, "reason": f"index [{index}] already exists", "index": index}
    return {"error": {"root_cause": [error], **error}, "status": 400}
