"""When a request may follow a write on a Milvus Lite 2.5 server."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

# Milvus Lite's hybrid timestamp: wall milliseconds above this many bits.
_LOGICAL_BITS = 18


class LiteClock:
    """Hold requests back until a Milvus Lite server's last insert is in the past.

    Milvus Lite 2.5.1 stamps an insert's rows with ``(wall ms << 18) + n``, ``n``
    being the rows its server has inserted since it started, and stamps a read
    or a delete with ``wall ms << 18`` alone. An upsert deletes the old rows
    first, at the present, so until the wall clock passes ``ms + n / 2**18``
    a read finds the document gone (the new rows lie in its future) and a
    delete misses the new rows. One in-flight millisecond was enough to fail a
    test on a loaded machine; after 3 million rows the window is 12 ms
    (bench/milvus_lite_visibility.py). Every request after an insert waits it out:
    a millisecond or so, which a batch's own round trip usually covers.
    """

    def __init__(
        self,
        now: Callable[[], float] = time.time,  # the server's clock is the wall clock
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._now = now
        self._sleep = sleep
        self.rows_inserted = 0
        self._settled_at = 0.0

    def inserted(self, rows: int) -> None:
        """Note an insert of ``rows`` that has returned (or failed part-way)."""
        self.rows_inserted += rows
        # The stamp's logical part spills into the milliseconds, one per 2**18
        # rows; the extra millisecond covers the one the insert was stamped in.
        spill_ms = (self.rows_inserted >> _LOGICAL_BITS) + 1
        self._settled_at = self._now() + spill_ms / 1000

    async def settle(self) -> None:
        """Return once every insert noted so far is visible to the next request."""
        delay = self._settled_at - self._now()
        if delay > 0:
            await self._sleep(delay)
