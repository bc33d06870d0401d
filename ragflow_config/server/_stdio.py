"""MCP over this process's stdin and stdout, with the same drain on SIGTERM as HTTP."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.message import SessionMessage

from ..pipeline import Pipeline
from ._mcp import create_mcp_server
from ._service import KnowledgeService, as_pipeline
from ._settings import ServeOptions

logger = logging.getLogger("ragflow_config.server")


class _InFlight:
    """The ids of the requests read and not yet answered; ``drained()`` waits for none."""

    def __init__(self) -> None:
        self._pending: set[Any] = set()
        self._answered = anyio.Event()

    def read(self, message: object) -> None:
        if isinstance(message, SessionMessage) and isinstance(
            message.message, types.JSONRPCRequest
        ):
            self._pending.add(message.message.id)

    def written(self, message: SessionMessage) -> None:
        if isinstance(message.message, (types.JSONRPCResponse, types.JSONRPCError)):
            self._pending.discard(message.message.id)
            self._answered.set()

    async def drained(self) -> None:
        while self._pending:
            self._answered = anyio.Event()
            await self._answered.wait()


class _StdinLines:
    """This process's stdin, line by line, read by a daemon thread.

    The SDK reads stdin in a worker thread that cannot be cancelled, and
    Python waits for it at exit: after SIGTERM, a client that neither writes
    nor closes stdin would keep the process alive. A daemon thread does not.
    """

    def __init__(self) -> None:
        self._lines: asyncio.Queue[str | None] = asyncio.Queue()
        loop = asyncio.get_running_loop()

        # Raw reads of fd 0: a buffered reader's lock, held by a thread still
        # reading at exit, makes the interpreter abort as it finalizes stdin.
        descriptor = sys.stdin.fileno()

        def read() -> None:
            decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
            pending = ""
            try:
                while data := os.read(descriptor, 65536):
                    pending += decoder.decode(data)
                    *lines, pending = pending.split("\n")
                    for line in lines:
                        loop.call_soon_threadsafe(self._lines.put_nowait, line + "\n")
                if pending:
                    loop.call_soon_threadsafe(self._lines.put_nowait, pending)
            except OSError:
                pass  # stdin closed under us: the same as its end
            finally:
                with contextlib.suppress(RuntimeError):  # the loop has closed
                    loop.call_soon_threadsafe(self._lines.put_nowait, None)

        threading.Thread(target=read, name="ragflow-config stdin", daemon=True).start()

    def __aiter__(self) -> _StdinLines:
        return self

    def close(self) -> None:
        """End the lines here, whatever the client does with stdin."""
        self._lines.put_nowait(None)

    async def __anext__(self) -> str:
        line = await self._lines.get()
        if line is None:
            raise StopAsyncIteration
        return line


async def serve_stdio(
    pipeline: Pipeline | str | Path,
    options: ServeOptions | None = None,
    *,
    knowledge_bases: list[str] | None = None,
) -> None:
    """Serve MCP over this process's stdin and stdout until the client closes stdin.

    SIGTERM (and SIGINT) drain as over HTTP: no request is read after it,
    those already read are answered (within ``options.drain_seconds``), then
    the server stops and the stores close. The SDK's server answers a request
    still running when its input ends with "Connection closed", so the input
    is ended only once nothing is in flight.
    """
    from mcp.server.stdio import stdio_server

    options = options or ServeOptions()
    pipeline = as_pipeline(pipeline)
    stop = anyio.Event()
    in_flight = _InFlight()
    stdin = _StdinLines()

    def on_signal(sig: int) -> None:
        if not stop.is_set():
            logger.warning(
                "signal %d: reading no more requests; draining those in flight (at most %gs)",
                sig,
                options.drain_seconds,
            )
        stop.set()
        stdin.close()  # the input ends here: a line that comes later is never read

    # stdio_server is entered first, so stray prints while the stores open go to
    # stderr, not the protocol. It ends last, once the stores are closed: its
    # writer once the last answer is out, its reader once its input ends (the
    # client may never close stdin, so the server ends it).
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
        try:
            async with KnowledgeService(
                pipeline, knowledge_bases, request_timeout=options.store_timeout_seconds
            ) as service:
                server = create_mcp_server(service, options, log_requests=True)
                requests, received = anyio.create_memory_object_stream[Any](0)
                answers, to_write = anyio.create_memory_object_stream[SessionMessage](0)

                async def read() -> None:
                    async with requests:  # closed once the input has ended and, after
                        # a signal, nothing is in flight: then the server stops
                        async for message in read_stream:
                            await requests.send(message)
                            # Once the server holds it (no await between): an answer
                            # cannot come before it counts.
                            in_flight.read(message)
                        if stop.is_set():
                            with anyio.move_on_after(options.drain_seconds):
                                await in_flight.drained()

                async def write() -> None:
                    async with to_write:
                        async for message in to_write:
                            await write_stream.send(message)
                            in_flight.written(message)

                with _signals_call(on_signal):
                    async with anyio.create_task_group() as tasks:
                        tasks.start_soon(read)
                        tasks.start_soon(write)
                        async with answers:
                            await server.run(
                                received, answers, server.create_initialization_options()
                            )
        finally:
            await write_stream.aclose()
            stdin.close()


@contextlib.contextmanager
def _signals_call(handler: Callable[[int], None]) -> Iterator[None]:
    """SIGTERM and SIGINT call ``handler`` (with the signal) while the block runs."""
    loop = asyncio.get_running_loop()
    signals = (signal.SIGTERM, signal.SIGINT)
    for sig in signals:
        loop.add_signal_handler(sig, handler, sig)
    try:
        yield
    finally:
        for sig in signals:
            loop.remove_signal_handler(sig)
