"""Running a server: HTTP (the JSON API and MCP) under uvicorn, or MCP over stdio."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import math
import os
import socket
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import uvicorn
from starlette.applications import Starlette

from .._errors import RagflowError
from ..pipeline import Pipeline
from ._app import create_app
from ._metrics import METRICS_HOST, metrics_app
from ._service import KnowledgeService, as_pipeline
from ._settings import ACCEPT_BURST, ServeOptions
from ._stdio import serve_stdio
from ._transport import bounded_protocol, refusals

logger = logging.getLogger("ragflow_config.server")

# accept() failing for want of a file (asyncio then waits a second before the next)
_OUT_OF_FILES = frozenset({errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM})


class ListenError(RagflowError):
    """The address cannot be bound (in use, not this machine's, not permitted)."""


@dataclass(frozen=True)
class Serving:
    """Where a server listens, announced once it does: a line for people, JSON for scripts."""

    url: str
    mcp_path: str
    knowledge_bases: tuple[str, ...]
    ui: bool = False  # whether the retrieval-testing page is served, at /ui
    metrics_url: str | None = None  # /metrics on a port of its own, without the token

    def __str__(self) -> str:
        page = f"; the retrieval-testing page at {self.url}/ui" if self.ui else ""
        if self.metrics_url is not None:
            page += f"; metrics at {self.metrics_url}"
        return (
            f"serving {', '.join(self.knowledge_bases)} on {self.url} (MCP at {self.mcp_path}; "
            f"API description at /openapi.json{page})"
        )

    def as_dict(self) -> dict[str, object]:
        return {
            "url": self.url,
            "mcp": self.url + self.mcp_path,
            "openapi": f"{self.url}/openapi.json",
            "knowledge_bases": list(self.knowledge_bases),
            **({"ui": f"{self.url}/ui"} if self.ui else {}),
            **({"metrics": self.metrics_url} if self.metrics_url is not None else {}),
        }


def _listening_socket(host: str, port: int) -> socket.socket:
    """A socket bound and listening before the server starts, so port 0 is known at once."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except OSError as exc:
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ListenError(
            f"cannot listen on {host}:{port}: {exc.strerror or exc}"
            + (
                "; choose another --port, or 0 for any free one"
                if exc.errno == errno.EADDRINUSE
                else ""
            )
        ) from None
    except BaseException:
        sock.close()
        raise
    sock.set_inheritable(True)
    return sock


def _open_file_limit() -> int | None:
    """This process's soft limit on open files, or None where there is none to read."""
    try:
        import resource
    except ImportError:  # not on Windows
        return None
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    return None if soft == resource.RLIM_INFINITY else int(soft)


def _open_files() -> int:
    """How many files this process holds now (its stores' and model's among them), or 0
    where that cannot be read."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        with contextlib.suppress(OSError):
            return len(os.listdir(folder))
    return 0


def _accept_failures_logged_once_a_second(loop: asyncio.AbstractEventLoop) -> None:
    """asyncio stops accepting for a second when the process runs out of files, and logs
    a traceback each time: under a flood, hundreds. Said here once a second, with a count."""
    previous = loop.get_exception_handler()

    def handle(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        if (
            isinstance(exc, OSError)
            and exc.errno in _OUT_OF_FILES
            and "accept" in str(context.get("message", ""))
        ):
            refusals.note(
                "no file left to accept a connection with (ulimit -n); accepting again in 1 s"
            )
        elif previous is not None:
            previous(loop, context)
        else:
            loop.default_exception_handler(context)

    loop.set_exception_handler(handle)


async def serve_http(
    pipeline: Pipeline | str | Path,
    options: ServeOptions | None = None,
    *,
    knowledge_bases: list[str] | None = None,
    announce: Callable[[Serving], None] | None = None,
) -> None:
    """Serve the JSON API and MCP over HTTP until SIGTERM or SIGINT, then drain and return.

    ``announce`` receives the address once the socket listens (the command prints
    it as a line on stderr, or as JSON on stdout under ``--json``).
    """
    options = options or ServeOptions()
    pipeline = as_pipeline(pipeline)
    sock = _listening_socket(options.host, options.port)
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    metrics_sock: socket.socket | None = None
    try:
        if options.metrics_port is not None:
            metrics_sock = _listening_socket(METRICS_HOST, options.metrics_port)
        async with KnowledgeService(
            pipeline, knowledge_bases, request_timeout=options.store_timeout_seconds
        ) as service:
            serving = Serving(
                f"http://{shown}:{port}",
                options.mcp_path,
                tuple(info.name for info in service.infos),
                ui=options.ui,
                metrics_url=None
                if metrics_sock is None
                else f"http://{METRICS_HOST}:{metrics_sock.getsockname()[1]}/metrics",
            )

            def ready() -> None:
                # Said from the application's startup, once SIGTERM is handled: the
                # socket already listens, and waiting connections are served next.
                if announce is not None:
                    announce(serving)

            app = create_app(service, options, on_ready=ready)
            limits = options.transport_limits(_open_file_limit(), _open_files())
            _accept_failures_logged_once_a_second(asyncio.get_running_loop())
            if limits.max_connections < options.max_connections:
                logger.warning(
                    "at most %d connections: the open-file limit (ulimit -n) leaves no room "
                    "for max_connections=%d",
                    limits.max_connections,
                    options.max_connections,
                )
            config = uvicorn.Config(
                app,
                http=bounded_protocol(limits),
                backlog=ACCEPT_BURST,
                log_level="warning",
                access_log=False,  # ours logs one line per request, without query strings
                timeout_keep_alive=math.ceil(options.idle_seconds),
                timeout_graceful_shutdown=math.ceil(options.drain_seconds),
                lifespan="on",
                server_header=False,
            )
            server = _DrainingServer(config)
            if metrics_sock is None:
                await server.serve(sockets=[sock])
            else:
                await _with_metrics_port(server, sock, metrics_app(app), metrics_sock)
    finally:
        sock.close()
        if metrics_sock is not None:
            metrics_sock.close()


async def _with_metrics_port(
    server: uvicorn.Server, sock: socket.socket, metrics: Starlette, metrics_sock: socket.socket
) -> None:
    """``server`` on ``sock``, and beside it ``metrics`` on ``metrics_sock`` until it ends."""
    side = _QuietServer(
        uvicorn.Config(
            metrics, log_level="warning", access_log=False, lifespan="off", server_header=False
        )
    )
    beside = asyncio.ensure_future(side.serve(sockets=[metrics_sock]))
    try:
        await server.serve(sockets=[sock])
    finally:
        side.should_exit = True
        await beside


class _QuietServer(uvicorn.Server):
    """A second server in the process: the main one alone takes SIGTERM and SIGINT, then
    stops this one."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class _DrainingServer(uvicorn.Server):
    """uvicorn's server, saying when a signal starts the drain.

    uvicorn raises the signal again once it has drained, which would end the
    process before the stores are closed; here the command returns instead,
    closes them, and exits 0.
    """

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            try:
                yield
            finally:
                self._captured_signals.clear()

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if not self.should_exit:
            logger.warning(
                "signal %d: no new connections; draining requests in flight (at most %gs)",
                sig,
                self.config.timeout_graceful_shutdown or 0,
            )
        super().handle_exit(sig, frame)


def serve(
    pipeline: Pipeline | str | Path,
    *,
    stdio: bool = False,
    options: ServeOptions | None = None,
    knowledge_bases: list[str] | None = None,
    announce: Callable[[Serving], None] | None = None,
) -> None:
    """Build ``pipeline`` once and serve its knowledge bases read-only; blocks until stopped.

    Over HTTP (the JSON API and MCP at ``/mcp``) on ``options.host:port``
    (127.0.0.1:8765 by default), or MCP over stdio with ``stdio=True``. Over HTTP,
    ``announce`` gets the address once it listens (default: one line on stderr).
    """
    if stdio:
        asyncio.run(serve_stdio(pipeline, options, knowledge_bases=knowledge_bases))
    else:
        asyncio.run(
            serve_http(
                pipeline,
                options,
                knowledge_bases=knowledge_bases,
                announce=announce or (lambda serving: print(serving, file=sys.stderr, flush=True)),
            )
        )
