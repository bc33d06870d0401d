"""A cap on the bytes of the files a run holds at once."""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager


class ByteBudget:
    """Files wait here, first come first served, until their size fits.

    A run keeps many files in flight so the parser processes never idle; the
    budget keeps that cheap when the files are large. A file larger than the
    whole budget takes all of it and goes alone, rather than never. Waiting
    is in order, so a large file is not passed over forever by small ones.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError(f"a byte budget must be at least 1, got {limit}")
        self.limit = limit
        self._free = limit
        self._waiting: deque[tuple[int, asyncio.Future[None]]] = deque()

    @property
    def free(self) -> int:
        return self._free

    @asynccontextmanager
    async def hold(self, size: int) -> AsyncIterator[None]:
        size = min(max(size, 0), self.limit)
        if self._waiting or self._free < size:
            granted: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            entry = (size, granted)
            self._waiting.append(entry)
            try:
                await granted  # the bytes are ours once it resolves
            except asyncio.CancelledError:
                if granted.cancelled():
                    if entry in self._waiting:
                        self._waiting.remove(entry)
                    self._grant()  # it may have been holding up the files behind it
                else:
                    self._release(size)  # granted, then cancelled before it could run
                raise
        else:
            self._free -= size
        try:
            yield
        finally:
            self._release(size)

    def _release(self, size: int) -> None:
        self._free += size
        self._grant()

    def _grant(self) -> None:
        while self._waiting and self._waiting[0][0] <= self._free:
            size, granted = self._waiting.popleft()
            if not granted.cancelled():
                self._free -= size
                granted.set_result(None)
