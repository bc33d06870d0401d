"""What each process of a benchmark's tree is, and its memory, read from /proc."""

from __future__ import annotations

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
