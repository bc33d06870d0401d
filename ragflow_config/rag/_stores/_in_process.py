"""An in-process engine's calls, run in turn on one thread of their own, off the event loop.

Qdrant's local mode answers through ``async def`` methods that never wait on
anything: a search computes in the caller, checking a filter against every
point. Awaited on the event loop, one costly search froze the whole server
(``/healthz`` included) for as long as it ran. Here each call runs on one
worker thread, in the order asked, so the engine sees its calls one at a time
as before (it holds no locks of its own), and the loop keeps answering.
"""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def _new_engine() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=1, thread_name_prefix="ragflow-config engine")


# One thread for every in-process engine of this process: their calls were
# serialized on the event loop before, and stay so.
_engine = _new_engine()
_thread = threading.local()


def _renew_after_fork() -> None:
    """A forked child gets an engine thread of its own.

    The child inherits the executor but not its thread, and an executor that
    believes its one thread exists never starts another: the child's first
    store call would wait forever.
    """
    global _engine
    _engine = _new_engine()


os.register_at_fork(after_in_child=_renew_after_fork)


def _completed(operation: Callable[[], Awaitable[T]]) -> T:
    """``operation()`` run to its end on this thread's own loop (made once)."""
    loop = getattr(_thread, "loop", None)
    if loop is None:
        loop = _thread.loop = asyncio.new_event_loop()
    return loop.run_until_complete(_awaited(operation))


async def _awaited(operation: Callable[[], Awaitable[T]]) -> T:
    return await operation()


async def off_loop(operation: Callable[[], Awaitable[T]]) -> T:
    """``await operation()``, run on the engine thread; the caller's loop stays free.

    A caller cancelled (a request past its deadline) stops waiting; the call
    itself runs to its end, and the next one starts after it.
    """
    return await asyncio.get_running_loop().run_in_executor(_engine, _completed, operation)
