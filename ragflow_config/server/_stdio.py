"""MCP over this process's stdin and stdout, with the same drain on SIGTERM as HTTP."""

from __future__ import annotations

import asyncio
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
from anyio.streams.memory import MemoryObjectSendStream
from mcp.shared.message import SessionMessage

from ..pipeline import Pipeline
from ._guards import parsed_json
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


_OVERLONG = object()  # stands for a line over the limit, whose bytes were dropped


class _StdinLines:
    """This process's stdin, line by line, read by a daemon thread.

    The SDK reads stdin in a worker thread that cannot be cancelled, and
    Python waits for it at exit: after SIGTERM, a client that neither writes
    nor closes stdin would keep the process alive. A daemon thread does not.

    Each read is searched for line ends once, so a line costs time linear in
    its length; a line over ``max_line_bytes`` is not kept (its bytes are
    dropped as they come) and is answered with a JSON-RPC error. A line that is
    no JSON-RPC message is answered here too, with its id when it has one (the
    SDK would only log it, and its client would wait for ever): ``refuse``
    writes the answer.
    """

    def __init__(self, max_line_bytes: int) -> None:
        self._lines: asyncio.Queue[str | object | None] = asyncio.Queue()
        self._max_line_bytes = max_line_bytes
        self._answers: MemoryObjectSendStream[SessionMessage] | None = None
        loop = asyncio.get_running_loop()

        # Raw reads of fd 0: a buffered reader's lock, held by a thread still
        # reading at exit, makes the interpreter abort as it finalizes stdin.
        descriptor = sys.stdin.fileno()

        def put(item: str | object | None) -> None:
            loop.call_soon_threadsafe(self._lines.put_nowait, item)

        def read() -> None:
            line = bytearray()
            overlong = False  # within a line past the limit: its bytes are dropped
            try:
                while data := os.read(descriptor, 65536):
                    start = 0
                    while (end := data.find(b"\n", start)) != -1:
                        if overlong or len(line) + end - start > max_line_bytes:
                            put(_OVERLONG)
                        else:
                            line += data[start:end]
                            put(line.decode("utf-8", errors="replace") + "\n")
                        line.clear()
                        overlong = False
                        start = end + 1
                    if not overlong and len(line) + len(data) - start > max_line_bytes:
                        overlong = True
                        line.clear()
                    elif not overlong:
                        line += data[start:]
                if overlong:
                    put(_OVERLONG)
                elif line:
                    put(line.decode("utf-8", errors="replace"))
            except OSError:
                pass  # stdin closed under us: the same as its end
            finally:
                with contextlib.suppress(RuntimeError):  # the loop has closed
                    put(None)

        threading.Thread(target=read, name="ragflow-config stdin", daemon=True).start()

    def __aiter__(self) -> _StdinLines:
        return self

    def answer_refusals_on(self, answers: MemoryObjectSendStream[SessionMessage]) -> None:
        """Where the errors of lines that are no message go: the transport's writer."""
        self._answers = answers

    async def _refuse(self, error: types.JSONRPCError) -> None:
        assert self._answers is not None, "answer_refusals_on() comes before reading"
        await self._answers.send(SessionMessage(error))

    def close(self) -> None:
        """End the lines here, whatever the client does with stdin."""
        self._lines.put_nowait(None)

    async def __anext__(self) -> str:
        while True:
            line = await self._lines.get()
            if line is None:
                raise StopAsyncIteration
            if line is _OVERLONG:
                await self._refuse(
                    _error(
                        None,
                        types.INVALID_REQUEST,
                        f"a message over {self._max_line_bytes} bytes; each message is one line "
                        f"of at most {self._max_line_bytes} bytes",
                    )
                )
                continue
            assert isinstance(line, str)
            refusal = _refusal(line)
            if refusal is None:
                return line
            await self._refuse(refusal)


def _error(request_id: Any, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message)
    )


def _refusal(line: str) -> types.JSONRPCError | None:
    """The error a line earns when it is no JSON-RPC message, or None when it is one."""
    if not line.strip():
        return None  # a blank line between messages: the SDK skips it
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        return None
    except ValueError:
        pass
    try:
        parsed = parsed_json(line)
    except ValueError:
        return _error(None, types.PARSE_ERROR, "the line is not valid JSON")
    found = parsed.get("id") if isinstance(parsed, dict) else None
    request_id = found if isinstance(found, (str, int)) and not isinstance(found, bool) else None
    return _error(
        request_id,
        types.INVALID_REQUEST,
        'not a JSON-RPC 2.0 message: an object with "jsonrpc": "2.0", a "method" string, '
        'an "id" (string or integer) for a request, and "params" an object when given',
    )


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
    is ended only once nothing is in flight: at stdin's end too, every request
    read before it is answered.

    A message is one line of at most ``options.max_body_bytes`` bytes (HTTP's
    body limit); a longer line is dropped as it is read and answered with a
    JSON-RPC error (id null), as is a line that is no JSON-RPC message (with
    its id when it has one).
    """
    from mcp.server.stdio import stdio_server

    options = options or ServeOptions()
    pipeline = as_pipeline(pipeline)
    stop = anyio.Event()
    in_flight = _InFlight()
    stdin = _StdinLines(options.max_body_bytes)

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
        stdin.answer_refusals_on(write_stream)
        try:
            async with KnowledgeService(
                pipeline, knowledge_bases, request_timeout=options.store_timeout_seconds
            ) as service:
                server = create_mcp_server(service, options, log_requests=True)
                requests, received = anyio.create_memory_object_stream[Any](0)
                answers, to_write = anyio.create_memory_object_stream[SessionMessage](0)

                async def read() -> None:
                    async with requests:  # closed once the input has ended (at its
                        # end or on a signal) and nothing is in flight: then the server stops
                        async for message in read_stream:
                            await requests.send(message)
                            # Once the server holds it (no await between): an answer
                            # cannot come before it counts.
                            in_flight.read(message)
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
