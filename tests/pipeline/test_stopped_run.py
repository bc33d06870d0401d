"""A `ragflow-config run` stopped by a signal stops its whole process tree, and a re-run finishes.

The tree of a run with parser processes: the run, multiprocessing's fork server
and resource tracker, and the parser processes the fork server forks. SIGTERM
once left all but the run itself running, and the pool's semaphores in
/dev/shm with them. The tree is read from /proc while the run works (Linux).
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ragflow_config.cli import main

from .test_run import make_project

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/maps").exists(), reason="reads the process tree from /proc"
)

FILES = 2000  # enough that the run is still going when the signal comes
# (signal, the exit status the run ends with, the line it ends with on stderr)
STOPS = [
    (signal.SIGTERM, 143, r"terminated: \d+ files? done; run again to continue"),
    (signal.SIGINT, 130, r"interrupted: \d+ files? done; run again to continue"),
    (signal.SIGKILL, -signal.SIGKILL, None),  # the parser processes must notice alone
]


def _stat(pid: int) -> tuple[int, str, str] | None:
    """(parent, state, start time) of a process, or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text.rsplit(")", 1)[1].split()
    return int(fields[1]), fields[0], fields[19]


def _descendants(root: int) -> dict[int, str]:
    """Every process under ``root``, by pid, with its start time (pids are reused)."""
    parents: dict[int, tuple[int, str]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit() and (stat := _stat(int(entry))) is not None:
            parents[int(entry)] = (stat[0], stat[2])
    found: dict[int, str] = {}
    ahead = [root]
    while ahead:
        parent = ahead.pop()
        for pid, (ppid, started) in parents.items():
            if ppid == parent and pid not in found:
                found[pid] = started
                ahead.append(pid)
    return found


def _semaphores(pid: int) -> set[str]:
    """The POSIX semaphores a process has open (mapped from /dev/shm/sem.*)."""
    try:
        maps = Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return set()
    return set(re.findall(r"/dev/shm/(sem\.\S+)", maps))


def _grandchildren(tree: dict[int, str], root: int) -> set[int]:
    return {pid for pid in tree if (stat := _stat(pid)) is not None and stat[0] != root}


def _end_what_is_left(run: subprocess.Popen[bytes], tree: dict[int, str]) -> None:
    """After a failure, the run and its processes, but for the resource tracker: it exits
    once they have, and unlinks their semaphores (killed, it would leave them)."""
    run.kill()
    run.wait()
    for pid, started in tree.items():
        with contextlib.suppress(OSError):  # gone meanwhile
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
            if _running(pid, started) and b"resource_tracker" not in command:
                os.kill(pid, signal.SIGKILL)


def _running(pid: int, started: str) -> bool:
    stat = _stat(pid)
    return stat is not None and stat[2] == started and stat[1] != "Z"


@pytest.mark.parametrize(
    ("stop", "status", "last_line"), STOPS, ids=[stop.name for stop, _, _ in STOPS]
)
def test_a_signal_stops_the_run_s_whole_tree_and_a_re_run_finishes(
    tmp_path: Path, stop: signal.Signals, status: int, last_line: str | None
) -> None:
    pipeline = make_project(tmp_path, broken=False)
    for i in range(FILES):
        (tmp_path / "docs" / f"n{i}.md").write_text(f"Note {i}. " * 20, encoding="utf-8")
    log = tmp_path / "stderr.log"
    with log.open("w") as stderr:
        # A session of its own: the signal reaches the run alone, not its tree.
        run = subprocess.Popen(
            [sys.executable, "-m", "ragflow_config.cli", "run", str(pipeline)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            start_new_session=True,
        )
    tree: dict[int, str] = {}
    try:
        semaphores: set[str] = set()
        deadline = time.monotonic() + 300
        # Under way: files written, and a parser process forked (a grandchild of the run).
        while log.read_text().count("docs: add ") < 20 or not _grandchildren(tree, run.pid):
            assert run.poll() is None, (
                f"the run ended before the signal:\n{log.read_text()[-2000:]}"
            )
            assert time.monotonic() < deadline, "the parser processes never started"
            tree |= _descendants(run.pid)
            semaphores |= _semaphores(run.pid)
            time.sleep(0.05)
        tree |= _descendants(run.pid)
        semaphores |= _semaphores(run.pid)
        assert len(tree) >= 3, tree  # the fork server, the resource tracker, a parser process
        assert semaphores  # the pool's queues' locks

        os.kill(run.pid, stop)
        assert run.wait(timeout=120) == status, log.read_text()[-2000:]
        if last_line is not None:
            assert re.fullmatch(last_line, log.read_text().splitlines()[-1]), log.read_text()[
                -2000:
            ]
        deadline = time.monotonic() + 60
        while left := {pid for pid, started in tree.items() if _running(pid, started)}:
            assert time.monotonic() < deadline, f"still running after the run: {left}"
            time.sleep(0.1)
        # Unlinked by the run (a stop it handled) or by the resource tracker as it exits.
        assert not {name for name in semaphores if Path("/dev/shm", name).exists()}
    finally:
        _end_what_is_left(run, tree)

    assert main(["run", str(pipeline), "--workers", "0", "-q"]) == 0
    assert main(["verify", str(pipeline), "-q"]) == 0  # every file indexed, in sync
