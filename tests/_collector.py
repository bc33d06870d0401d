"""The cyclic garbage collector's passes, as ``gc`` reports them: what a test counts to
show that a pause held, without timing anything."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_passes() -> Iterator[list[int]]:
    """The generation of every pass that starts inside, in order."""
    passes: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            passes.append(info["generation"])

    gc.callbacks.append(count)
    try:
        yield passes
    finally:
        gc.callbacks.remove(count)
