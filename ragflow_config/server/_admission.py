"""Admission control: how many searches run at once, for each client and in all.

Six clients looping on long queries once pushed a seventh's short query from
10 ms to a second: every request was let in, and each waited behind all the
others. Here a request that does store or model work (a search, a listing,
MCP, the retrieval page) is admitted by :class:`Admission`:

- at most ``per_client`` of one client's requests run or wait at once (a
  client is its address: the server has one token, shared by every client);
- at most ``running`` run at once; the others wait in a queue of at most
  ``queued``, for at most ``wait_seconds``;
- a freed place goes to the waiting client with the fewest requests running,
  so a light client is not stuck behind a heavy one's queue.

Past a bound the answer is 429 with ``Retry-After``, at once: a client is told
to come back rather than left to stall. ``/healthz``, ``/readyz``, the
OpenAPI document and the metrics are never queued.
"""

from __future__ import annotations

import asyncio
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass

from starlette.types import ASGIApp, Receive, Scope, Send

from ._guards import send_error

RETRY_AFTER_SECONDS = 1


class Refused(Exception):
    """Admission refused; the message says which bound, ``reason`` names it for the metrics."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass(frozen=True)
class AdmissionLimits:
    per_client: int
    running: int
    queued: int
    wait_seconds: float


class Admission:
    """The places for requests that do store or model work; see the module's docstring."""

    def __init__(self, limits: AdmissionLimits) -> None:
        self.limits = limits
        self.running = 0
        self.queued = 0
        self._by_client: Counter[str] = Counter()  # running or waiting, per client
        self._running_by_client: Counter[str] = Counter()
        self._waiting: dict[str, deque[asyncio.Future[None]]] = {}

    async def enter(self, client: str) -> None:
        """A place for one request of ``client`` (give it back with :meth:`leave`);
        :class:`Refused` if there is none."""
        limits = self.limits
        if self._by_client[client] >= limits.per_client:
            raise Refused(
                "client",
                f"this client has {limits.per_client} requests in flight already; "
                "wait for one to finish",
            )
        if self.running < limits.running and not self.queued:
            self._start(client)
            return
        if self.queued >= limits.queued:
            raise Refused("queue", f"the server is busy: {limits.queued} requests are waiting")
        granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiting.setdefault(client, deque()).append(granted)
        self._by_client[client] += 1
        self.queued += 1
        try:
            await asyncio.wait_for(asyncio.shield(granted), limits.wait_seconds)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            if granted.done():  # given a place as the wait ended: hand it on
                self.leave(client)
            else:
                granted.cancel()
                self._waiting[client].remove(granted)
                if not self._waiting[client]:
                    del self._waiting[client]
                self.queued -= 1
                self._forget(client)
            if isinstance(exc, asyncio.TimeoutError):
                raise Refused(
                    "wait", f"the server is busy: no place freed in {limits.wait_seconds:g} s"
                ) from None
            raise

    def _start(self, client: str, *, queued: bool = False) -> None:
        self.running += 1
        self._running_by_client[client] += 1
        if not queued:
            self._by_client[client] += 1

    def leave(self, client: str) -> None:
        self.running -= 1
        self._running_by_client[client] -= 1
        if not self._running_by_client[client]:
            del self._running_by_client[client]
        self._forget(client)
        self._grant()

    def _forget(self, client: str) -> None:
        self._by_client[client] -= 1
        if not self._by_client[client]:
            del self._by_client[client]

    def _grant(self) -> None:
        while self.running < self.limits.running and self._waiting:
            # The waiting client with the fewest running (the longest waiting among equals:
            # dicts keep insertion order, and min() keeps the first of equals).
            client = min(self._waiting, key=lambda c: self._running_by_client[c])
            waiters = self._waiting.pop(client)
            granted = waiters.popleft()
            if waiters:
                self._waiting[client] = waiters  # to the back: the next client's turn first
            self.queued -= 1
            self._start(client, queued=True)
            granted.set_result(None)


def client_of(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else "unknown"


class AdmissionMiddleware:
    """Admits the requests ``does_work`` picks through ``admission``; 429 past its bounds."""

    def __init__(
        self,
        app: ASGIApp,
        admission: Admission,
        does_work: Callable[[Scope], bool],
        on_refused: Callable[[Refused], None] = lambda refused: None,
    ) -> None:
        self.app = app
        self.admission = admission
        self.does_work = does_work
        self.on_refused = on_refused

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self.does_work(scope):
            await self.app(scope, receive, send)
            return
        client = client_of(scope)
        try:
            await self.admission.enter(client)
        except Refused as refused:
            self.on_refused(refused)
            retry = [(b"retry-after", str(RETRY_AFTER_SECONDS).encode())]
            await send_error(send, 429, str(refused), retry)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            self.admission.leave(client)
