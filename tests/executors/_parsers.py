"""Parsers that misbehave on one file name, as a pathological document makes a real one do."""

from __future__ import annotations

import gc
import os
import signal
import threading
from pathlib import Path

from ragflow_config.rag import Section, TextParser


class HangingTextParser(TextParser):
    """Never returns for a file named ``hang.txt``: a pathological document."""

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        if filename.endswith("hang.txt"):
            threading.Event().wait()
        return await super().parse(file, filename)


class WorkerKillingTextParser(TextParser):
    """The first time it meets ``victim.md``, kills the Ray worker it runs in (an OOM kill, say).

    The file's last line names a marker file that records the kill (the workers
    share no memory with the test): the task's retry then parses normally.
    """

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        if filename.endswith("victim.md"):
            assert isinstance(file, bytes)
            marker = Path(file.decode().splitlines()[-1])
            if not marker.exists():
                marker.write_text(str(os.getpid()))
                os.kill(os.getpid(), signal.SIGKILL)
        return await super().parse(file, filename)


class FreezeCountParser(TextParser):
    """Puts ``gc.get_freeze_count()`` of the process that parses into each section."""

    async def parse(self, file: bytes | str, filename: str) -> list[Section]:
        return [
            section.model_copy(update={"metadata": {"frozen": gc.get_freeze_count()}})
            for section in await super().parse(file, filename)
        ]
