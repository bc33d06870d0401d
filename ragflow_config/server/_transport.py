"""The HTTP/1.1 transport under the application: every resource a client can hold is bounded.

uvicorn with httptools, its C parser, parses fastest (bench/README.md), but
bounds nothing of its own: a header block grows without limit and a
connection that sends nothing, or a byte a minute, stays open for ever. This
protocol is uvicorn's ``HttpToolsProtocol`` (a class uvicorn takes as
``Config(http=...)``) with the bounds of :class:`TransportLimits`, enforced
before any byte reaches the application, and so before the token check:

- at most ``max_connections`` open connections; past it, the connection that
  has waited longest without a request is answered 503 and closed to make room
  (slow clients cannot lock the others out), or, when every connection is in a
  request, the new one is;
- a request line of at most ``max_request_line_bytes`` (414 beyond), at most
  ``max_headers`` header fields and ``max_header_bytes`` for the whole head (431);
- a new connection, or one between requests, sends its next request within
  ``idle_seconds``, or is closed;
- a head, from its first byte, is complete within ``header_seconds`` (408);
- a body, from the end of its head, is complete within ``body_seconds`` (408).

Every refusal is the API's JSON error body with ``Connection: close``, and is
logged at most once a second (a flood must not flood the log too).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

import httptools
from uvicorn.protocols.http.httptools_impl import STATUS_LINE, HttpToolsProtocol

from ._guards import error_body

logger = logging.getLogger("ragflow_config.server")


@dataclass(frozen=True)
class TransportLimits:
    """What one client may hold of the server; see the module's docstring."""

    max_connections: int
    max_request_line_bytes: int
    max_header_bytes: int
    max_headers: int
    idle_seconds: float
    header_seconds: float
    body_seconds: float


class _Refused(Exception):
    """Raised from a parser callback to stop parsing; data_received answers it."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


class RefusalLog:
    """One warning a second at most, saying how many refusals it stands for."""

    def __init__(self, what: str = "refused a connection") -> None:
        self._what = what
        self._last = float("-inf")
        self._unsaid = 0

    def note(self, reason: object) -> None:
        now = time.monotonic()
        self._unsaid += 1
        if now - self._last < 1.0:
            return
        more = (
            f" (and {self._unsaid - 1} more since the last such line)" if self._unsaid > 1 else ""
        )
        logger.warning("%s: %s%s", self._what, reason, more)
        self._last = now
        self._unsaid = 0


refusals = RefusalLog()


def refusal(status: int, message: str) -> bytes:
    """A whole HTTP/1.1 response carrying the API's JSON error, closing the connection."""
    body = error_body(message)
    return b"".join(
        [
            STATUS_LINE[status],
            b"content-type: application/json\r\n",
            b"content-length: " + str(len(body)).encode() + b"\r\n",
            b"connection: close\r\n\r\n",
            body,
        ]
    )


def bounded_protocol(limits: TransportLimits) -> type[HttpToolsProtocol]:
    """uvicorn's httptools protocol class, bound to ``limits`` (for ``Config(http=...)``)."""
    return type("BoundedHttpToolsProtocol", (_BoundedProtocol,), {"limits": limits})


class _BoundedProtocol(HttpToolsProtocol):
    limits: TransportLimits

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0
        self._deadline: asyncio.TimerHandle | None = None
        self._accepted_at = 0.0

    # -- connection ------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._accepted_at = time.monotonic()
        if len(self.connections) > self.limits.max_connections:
            waiting = self._longest_waiting()
            if waiting is None:  # every connection is in a request: this one waits its turn
                self._refuse(503, f"the server holds {self.limits.max_connections} connections")
                return
            # Slow clients (slowloris) must not lock everyone out: the connection that
            # has waited longest without a request makes room for this one.
            waiting._refuse(503, "the server is full; a connection without a request was closed")
        # uvicorn arms its keep-alive timer only after a response; a connection
        # that never sends a request is held to the same idle time.
        # (Between requests, uvicorn's own is set to the same time: ``timeout_keep_alive``.)
        self.timeout_keep_alive_task = self.loop.call_later(
            self.limits.idle_seconds, self.timeout_keep_alive_handler
        )

    def _longest_waiting(self) -> _BoundedProtocol | None:
        """The connection open longest without a request in progress, but for this one."""
        waiting = [
            other
            for other in self.connections
            if other is not self
            and isinstance(other, _BoundedProtocol)
            and other._in_head
            and (other.cycle is None or other.cycle.response_complete)
            and not other.transport.is_closing()
        ]
        return min(waiting, key=lambda other: other._accepted_at, default=None)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._unset_keepalive_if_required()
        if self._in_head:
            if self._deadline is None:
                self._arm(self.limits.header_seconds, "the request's headers", 408)
            self._head_bytes += len(data)
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserCallbackError as exc:
            if isinstance(exc.__context__, _Refused):
                self._refuse(exc.__context__.status, exc.__context__.message)
            else:
                self._refuse(400, "the request is not valid HTTP/1.1")
            return
        except httptools.HttpParserUpgrade:
            self._refuse(400, "this server does not upgrade connections")
            return
        except httptools.HttpParserError:
            self._refuse(400, "the request is not valid HTTP/1.1")
            return
        if self._in_head and self._head_bytes > self.limits.max_header_bytes:
            # The head is still incomplete and already too large: httptools would
            # keep buffering it, so it is refused before the rest arrives.
            self._refuse(431, f"the request's head is over {self.limits.max_header_bytes} bytes")

    def send_400_response(self, msg: str) -> None:
        self._refuse(400, "the request is not valid HTTP/1.1")

    # -- parser callbacks --------------------------------------------------------

    def on_url(self, url: bytes) -> None:
        super().on_url(url)
        if len(self.url) > self.limits.max_request_line_bytes:
            raise _Refused(414, f"the URL is over {self.limits.max_request_line_bytes} bytes")

    def on_header(self, name: bytes, value: bytes) -> None:
        self._header_count += 1
        if self._header_count > self.limits.max_headers:
            raise _Refused(431, f"the request has over {self.limits.max_headers} header fields")
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        size = len(self.url) + sum(len(n) + len(v) + 4 for n, v in self.headers)
        if size > self.limits.max_header_bytes:  # a head that came in one large read
            raise _Refused(431, f"the request's head is over {self.limits.max_header_bytes} bytes")
        self._in_head = False
        self._disarm()
        super().on_headers_complete()
        self._arm(self.limits.body_seconds, "the request's body", 408)

    def on_message_complete(self) -> None:
        self._disarm()
        self._in_head = True
        self._head_bytes = 0
        self._header_count = 0
        super().on_message_complete()

    # -- refusals ----------------------------------------------------------------

    def _arm(self, seconds: float, what: str, status: int) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(
            seconds, self._refuse, status, f"{what} did not arrive within {seconds:g} s"
        )

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _refuse(self, status: int, message: str) -> None:
        """Answer ``status`` with the JSON error (unless a response has begun), then close."""
        self._disarm()
        self._unset_keepalive_if_required()
        if self.transport.is_closing():
            return
        refusals.note(f"{status} {message}")
        cycle = self.cycle
        started = cycle is not None and cycle.response_started and not cycle.response_complete
        if cycle is not None and not cycle.response_complete:
            # The application reading this request sees the client gone, and writes nothing more.
            cycle.disconnected = True
            cycle.message_event.set()
        if not started:
            self.transport.write(refusal(status, message))
        self.transport.close()
