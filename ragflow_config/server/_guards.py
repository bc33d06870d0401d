"""The ASGI guards in front of every route, the JSON API and MCP alike.

From the outside in (see ``create_app``):

- :class:`JSONErrorsMiddleware`: every error body is the API's JSON, even one a
  framework wrote as plain text, and a request cut by the drain gets a JSON 503;
- :class:`OutcomeMiddleware`: each request's status and time, to the access
  log (:class:`AccessLog`, one line per request) and the metrics;
- :class:`HostOriginMiddleware`: the Host and Origin checks against DNS rebinding;
- CORS, the bearer token (``_auth``), then :class:`BodyLimitMiddleware`.
"""

from __future__ import annotations

import asyncio
import ipaddress
import json
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from http import HTTPStatus
from typing import Any
from urllib.parse import urlsplit

import pydantic_core
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .._search_input import echoed

access_logger = logging.getLogger("ragflow_config.server.access")
logger = logging.getLogger("ragflow_config.server")

# What of a plain-text error body is kept as the JSON error's message.
MAX_PLAIN_MESSAGE = 500


# pydantic-core's JSON parser refuses nesting past this depth (json.loads recurses,
# and 30,000 nested brackets inside the body limit raised RecursionError).
MAX_JSON_DEPTH = 200


def parsed_json(data: bytes | str) -> Any:
    """``data`` parsed as JSON, at most :data:`MAX_JSON_DEPTH` levels deep; ValueError if not.

    Integers of any size stay integers (the checks that take them refuse
    what does not fit); ``NaN`` and ``Infinity`` are read as Python reads them.
    """
    return pydantic_core.from_json(data)


def error_body(message: str, kind: str | None = None) -> bytes:
    """The API's error, ``{"error": {"message": ...}}``, as every route and refusal writes it;
    with ``"type"``, the library exception it stands for, when there is one."""
    error = {"message": message} if kind is None else {"message": message, "type": kind}
    return json.dumps({"error": error}, ensure_ascii=False, separators=(",", ":")).encode()


def error_response(
    status: int, message: str, headers: dict[str, str] | None = None, *, kind: str | None = None
) -> Response:
    """The API's error with ``status``, as a Starlette response."""
    return Response(error_body(message, kind), status, headers, media_type="application/json")


def _header(scope: Scope, wanted: bytes) -> bytes | None:
    for name, value in scope.get("headers", ()):
        if name == wanted:
            return bytes(value)
    return None


class JSONErrorsMiddleware:
    """Rewrites an error response that is not JSON into the API's JSON error.

    Starlette's CORS refusals, the MCP SDK's own errors and anything else a
    framework answers in plain text reach the client as ``{"error": {"message":
    <its text>}}`` with the same status. A request still running when the
    drain's time is up is cancelled by the server: it is answered 503 here
    (the server would write a plain-text 500) and ends quietly.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: Message | None = None
        text: list[bytes] = []
        started = False

        async def send_json_errors(message: Message) -> None:
            nonlocal held, started
            if message["type"] == "http.response.start":
                started = True
                content_type = dict(message.get("headers", ())).get(b"content-type", b"")
                # A page (the retrieval-testing page's text/html) keeps its own error body.
                if message["status"] >= 400 and not content_type.startswith(
                    (b"application/json", b"text/html")
                ):
                    held = message
                    return
            elif held is not None and message["type"] == "http.response.body":
                text.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                body = b"".join(text).decode("utf-8", "replace").strip()
                status = int(held["status"])
                await send_error(send, status, body[:MAX_PLAIN_MESSAGE], held.get("headers", ()))
                return
            await send(message)

        try:
            await self.app(scope, receive, send_json_errors)
        except asyncio.CancelledError:
            # Cancelled by the server once the drain's time is up. The request's
            # work is over either way; answering here (when nothing was sent yet)
            # tells the client to retry, and returning keeps the server from
            # logging a cancelled request as an application error.
            if not started:
                await send_error(send, 503, "the server is shutting down; try again")


async def send_error(
    send: Send, status: int, message: str, headers: Iterable[tuple[bytes, bytes]] = ()
) -> None:
    """The API's error with ``status``, sent through an ASGI ``send`` (an empty message
    becomes the status's phrase); ``headers`` go with it, but for its own content headers."""
    phrase = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    body = error_body(message or phrase)
    kept = [(n, v) for n, v in headers if n not in (b"content-type", b"content-length")]
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                *kept,
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def host_name(host: str) -> str:
    """The name part of a Host header (``[::1]:8765`` → ``::1``), lower case."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].split("]", 1)[0]
    name, _, port = host.rpartition(":")
    if name and port.isdigit() and ":" not in name:
        host = name
    return host.rstrip(".")


def _is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class HostOriginMiddleware:
    """Refuses, with a JSON 403, a request by a host name or from an origin not allowed.

    DNS rebinding points a name the attacker owns at this server, so a page
    of theirs reads it as its own origin: its requests carry their name in
    Host. Allowed are the names in ``host_names`` (the bound address,
    localhost, ``--allowed-host``) and any address literal, which no one can
    rebind. An ``Origin``, when a browser sends one, must be one of
    ``origins`` (``--cors-origin``) or the request's own (scheme and Host).
    """

    def __init__(self, app: ASGIApp, host_names: frozenset[str], origins: Iterable[str]) -> None:
        self.app = app
        self.host_names = host_names
        self.origins = frozenset(origin.rstrip("/").lower() for origin in origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        problem = self._problem(scope)
        if problem is None:
            await self.app(scope, receive, send)
            return
        await error_response(403, problem)(scope, receive, send)

    def _problem(self, scope: Scope) -> str | None:
        raw_host = _header(scope, b"host")
        host = raw_host.decode("latin-1") if raw_host is not None else ""
        name = host_name(host)
        if not name:
            return "the request names no Host"
        if name not in self.host_names and not _is_address(name):
            return (
                f"Host {echoed(host)!r} is not a name of this server; "
                "start it with --allowed-host to allow it"
            )
        raw_origin = _header(scope, b"origin")
        if raw_origin is None:
            return None
        origin = raw_origin.decode("latin-1").rstrip("/").lower()
        if origin in self.origins:
            return None
        parts = urlsplit(origin)
        if parts.scheme in ("http", "https") and parts.netloc == host.strip().lower():
            return None  # the server's own page
        return f"Origin {echoed(origin)!r} is not allowed; start the server with --cors-origin"


Answered = Callable[[Scope, int, float], None]


class OutcomeMiddleware:
    """Times each HTTP request and notes its status; once it is answered, each of
    ``listeners`` hears of it (``listener(scope, status, seconds)``): the access
    log, the metrics. A request that ends without an answer counts as 500."""

    def __init__(self, app: ASGIApp, listeners: Sequence[Answered]) -> None:
        self.app = app
        self.listeners = tuple(listeners)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            elapsed = time.perf_counter() - started
            for listener in self.listeners:
                listener(scope, status, elapsed)


def route_template(scope: Scope) -> str:
    """The template of the route that answered (``/ui`` routes under their mount), or
    ``(none)``: a path no route has, or a request refused before routing, is no label
    for metrics or traces (any client could mint them without end)."""
    template = getattr(scope.get("route"), "path", None)
    if not isinstance(template, str):
        return "(none)"
    return f"{scope.get('root_path', '')}{template}"


class AccessLog:
    """One line per HTTP request: client, method, path (no query string), status, time.

    Query text is never logged unless ``log_queries`` (then the search query
    rides on the same line).
    """

    def __init__(self, log_queries: bool = False) -> None:
        self.log_queries = log_queries

    def __call__(self, scope: Scope, status: int, seconds: float) -> None:
        client = scope.get("client")
        where = client[0] if client else "-"
        line = json.dumps(f"{scope['method']} {echoed(scope['path'])}", ensure_ascii=True)
        extra = ""
        query = scope.get("state", {}).get("query")
        if self.log_queries and query is not None:
            extra = " query=" + json.dumps(query, ensure_ascii=True)
        access_logger.info("%s %s %d %.1fms%s", where, line, status, seconds * 1000, extra)


class BodyTooLarge(Exception):
    """A request body grew past the limit while it streamed in."""


class BodyLimitMiddleware:
    """413 for a body over ``limit`` bytes: by its Content-Length, or while it streams in."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared_length = _header(scope, b"content-length")
        if declared_length is not None:
            try:
                declared = int(declared_length)
            except ValueError:
                await error_response(400, "invalid Content-Length")(scope, receive, send)
                return
            if declared > self.limit:
                message = f"the request body is larger than {self.limit} bytes"
                await error_response(413, message)(scope, receive, send)
                return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise BodyTooLarge
            return message

        await self.app(scope, counted, send)
