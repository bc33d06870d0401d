"""What each process of a benchmark's tree is, and its memory, read from /proc."""

from __future__ import annotations

import threading
from collections.abc import Callable

import psutil


def role(process: psutil.Process, root: int, roles: dict[int, str]) -> str:
    """Main, fork server, parser process N or resource tracker, from the command line and parent."""
    if process.pid in roles:
        return roles[process.pid]
    cmdline = " ".join(process.cmdline())
    parent = process.ppid()
    if process.pid == root:
        name = "main"
    elif "resource_tracker" in cmdline:
        name = "resource tracker"
    elif parent == root and "forkserver" in cmdline:
        name = "fork server"
    elif roles.get(parent) == "fork server":
        name = f"parser process {sum(r.startswith('parser') for r in roles.values()) + 1}"
    else:
        name = f"other ({process.name()})"
    roles[process.pid] = name
    return name


ROLLUP = {"Rss": "rss", "Pss": "pss", "Pss_Anon": "pss_anon", "Pss_File": "pss_file"}


def rollup(pid: int | str = "self") -> dict[str, float]:
    """MB from /proc/PID/smaps_rollup: RSS, PSS (and its anonymous and file parts), USS.

    Read here rather than through psutil, whose RSS comes from statm: on this
    kernel its counters lag, and a sample's RSS came out below its own PSS.
    """
    fields = {"uss": 0.0}
    with open(f"/proc/{pid}/smaps_rollup") as rollup_file:
        for line in rollup_file:
            key, _, rest = line.partition(":")
            if key in ROLLUP:
                fields[ROLLUP[key]] = int(rest.split()[0]) / 1024
            elif key in ("Private_Clean", "Private_Dirty"):
                fields["uss"] += int(rest.split()[0]) / 1024
    return fields


class PhasePeaks:
    """This process's highest PSS, its anonymous part, and any ``extra`` reading (MB),
    per phase: sampled every ``every`` seconds while the caller moves ``phase`` on."""

    def __init__(
        self, phase: str, every: float = 0.25, extra: dict[str, Callable[[], float]] | None = None
    ) -> None:
        self.phase = phase
        self.peaks: dict[str, dict[str, float]] = {}
        self._every, self._extra = every, extra or {}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.wait(self._every):
            memory = rollup()
            readings = {"pss_mb": memory["pss"], "pss_anon_mb": memory["pss_anon"]}
            readings.update((name, read()) for name, read in self._extra.items())
            peak = self.peaks.setdefault(self.phase, dict.fromkeys(readings, 0.0))
            for name, value in readings.items():
                peak[name] = round(max(peak[name], value), 1)

    def stop(self) -> dict[str, dict[str, float]]:
        self._done.set()
        self._thread.join()
        return self.peaks
