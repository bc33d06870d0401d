"""Pausing the cyclic garbage collector where everything made lives on."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Automatic collection off inside, and as it was after (a caller's pause is kept).

    For an import, whose modules and classes live as long as the process, and
    for a one-shot command, which exits when done: the collector's passes there,
    each over more objects than the last, free next to nothing. It is
    process-wide: other threads' objects are not collected meanwhile either.

    What was made meanwhile then joins the oldest generation, where the passes
    it skipped would have moved what lives on; left young, all of it would be
    traversed by the first pass after. Garbage among it waits for a full pass.
    Not when the process has frozen objects (a forked server's, kept apart so
    its children share them): moving them would undo that.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            if gc.get_freeze_count() == 0:
                gc.freeze()  # every generation's objects into the permanent one, unvisited...
                gc.unfreeze()  # ...and back, into the oldest
            gc.enable()
