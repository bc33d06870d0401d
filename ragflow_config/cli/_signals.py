"""SIGTERM stops a command's event loop as Ctrl-C does: its work is cancelled and cleaned up.

SIGTERM's default action ends the process at once, and nothing of its cleanup
runs: `run`'s parser processes were left behind.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["Terminated", "run_until_terminated"]

T = TypeVar("T")


class Terminated(Exception):
    """SIGTERM came while the coroutine ran; it was cancelled and its cleanup has run."""


def run_until_terminated(main: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run(main)``, where SIGTERM cancels ``main`` and then raises ``Terminated``.

    Cancelled, ``main``'s ``finally`` blocks run before this returns, as they do
    for Ctrl-C (asyncio.run cancels on SIGINT). Where the event loop takes no
    signal handlers (Windows), SIGTERM keeps its default action.
    """
    terminated = False

    async def cancelled_by_sigterm() -> T:
        task = asyncio.current_task()
        assert task is not None

        def cancel() -> None:
            nonlocal terminated
            terminated = True
            task.cancel()

        loop = asyncio.get_running_loop()
        try:
            loop.add_signal_handler(signal.SIGTERM, cancel)
        except NotImplementedError:
            return await main
        try:
            return await main
        finally:
            loop.remove_signal_handler(signal.SIGTERM)

    previous = signal.getsignal(signal.SIGTERM)
    try:
        result = asyncio.run(cancelled_by_sigterm())
    except asyncio.CancelledError:
        if terminated:
            raise Terminated from None
        raise
    finally:
        # The loop's removal sets the default action, not what the caller had.
        signal.signal(signal.SIGTERM, previous)
    if terminated:  # ``main`` took the cancellation and returned
        raise Terminated
    return result
