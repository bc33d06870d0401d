"""What `ragflow-config run` shows while it works, and how it stops on Ctrl-C."""

from __future__ import annotations

import io
import logging
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from ragflow_config.cli import main
from ragflow_config.cli._progress import Progress
from ragflow_config.pipeline import Change, Pipeline, RunOptions

from ._terminal import Terminal
from .test_kb_commands import project


class CtrlCAfterFirstFile(io.StringIO):
    """A log that presses Ctrl-C (a real SIGINT to this process) once the first file is reported."""

    def __init__(self) -> None:
        super().__init__()
        self.pressed = False

    def write(self, text: str) -> int:
        written = super().write(text)
        if not self.pressed and text.startswith("notes: "):
            self.pressed = True
            signal.raise_signal(signal.SIGINT)
        return written


async def test_a_terminal_sees_files_of_the_total_chunks_and_failures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line for every column
    pipeline = Pipeline.load(project(tmp_path))
    (tmp_path / "docs" / "red" / "broken.md").write_bytes(b"caf\xe9")  # not UTF-8: fails
    screen = Terminal()
    progress = Progress(screen)
    try:
        report = await pipeline.run(
            options=RunOptions(workers=0, progress=progress, files_found=progress.files_found)
        )
    finally:
        progress.close()
    [kb] = report.knowledge_bases
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue())  # colours and cursor moves
    assert f"7/7 files, {kb.chunks} chunks, 1 failed" in shown
    assert "files/s" in shown and "left" in shown


def test_a_knowledge_base_shows_its_name_bar_and_columns_before_its_first_file(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    screen = Terminal()
    progress = Progress(screen)
    progress.files_found("notes", 5)
    progress.close()
    last = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", screen.getvalue()).split("\r")[-1]
    # No file done yet: no rate measured (0.0, not a guess) and no time left known.
    assert re.fullmatch(
        r"notes +━+ 0/5 files, 0 chunks, 0 failed 0\.0 files/s -:--:-- left\n", last
    ), last


def test_a_log_gets_one_line_per_change_and_no_failure_twice() -> None:
    log = io.StringIO()
    progress = Progress(log)
    progress("docs", Change("add", "a.md", "id-a", "new file", 2))
    progress("docs", Change("unchanged", "b.md", "id-b"))
    progress("docs", Change("failed", "c.md", "id-c", "not valid utf-8"))
    progress.close()
    assert log.getvalue() == "docs: add a.md (new file)\n"
    assert progress.done == 3


def test_ctrl_c_ends_a_run_with_one_line_saying_how_far_it_got(tmp_path: Path) -> None:
    pipeline = project(tmp_path)
    for i in range(2000):  # enough that the run is still going when the signal comes
        (tmp_path / "docs" / "red" / f"n{i}.md").write_text(f"Note {i}. " * 200)
    # The command as a terminal starts it: an ignored SIGINT stays ignored across exec
    # (under nohup, `&` in a script, mutmut's runner), a handled one is reset to the default.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        run = subprocess.Popen(
            [sys.executable, "-m", "ragflow_config.cli", "run", str(pipeline)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # Ctrl-C reaches the whole group: the parser processes too
        )
    finally:
        signal.signal(signal.SIGINT, ignored)
    assert run.stderr is not None
    first = run.stderr.readline()  # the first file written: the run is under way
    assert first.startswith("notes: add "), first
    os.killpg(run.pid, signal.SIGINT)
    _, err = run.communicate(timeout=300)
    assert run.returncode == 130
    lines = [line for line in err.splitlines() if not line.startswith("notes: add ")]
    assert len(lines) == 1, err[-2000:]
    assert re.fullmatch(r"interrupted: \d+ files? done; run again to continue", lines[0])


def test_ctrl_c_in_process_ends_the_command_with_exit_130_and_how_far_it_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The subprocess test above shows the whole program; this one runs the command
    # in the test's process, where a mutation test's copy of the code is the one used.
    pipeline = project(tmp_path)
    log = CtrlCAfterFirstFile()
    monkeypatch.setattr(sys, "stderr", log)
    # Ctrl-C as on a terminal, whatever the process running the tests did with SIGINT.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        assert main(["run", str(pipeline), "--workers", "0"]) == 130
    finally:
        signal.signal(signal.SIGINT, handler)
    lines = [line for line in log.getvalue().splitlines() if not line.startswith("notes: add ")]
    assert len(lines) == 1, log.getvalue()
    assert re.fullmatch(r"interrupted: \d+ files? done; run again to continue", lines[0])


def _screen_lines(raw: str) -> list[str]:
    """The lines a terminal shows of ``raw``: colours dropped, cut at cursor moves."""
    text = re.sub(r"\x1b\[[0-9;]*m", "", raw)
    return [line for line in re.split(r"\x1b\[[0-9;?]*[A-Za-z]|\r|\n", text) if line.strip()]


def _console(stream: io.StringIO) -> Console:
    return Console(file=stream, width=80, force_terminal=True)


def test_the_display_fits_80_columns_one_line_per_knowledge_base() -> None:
    screen = io.StringIO()
    progress = Progress(screen, console=_console(screen))
    progress.files_found("notes", 12)
    progress.files_found("a-knowledge-base-with-a-long-name", 123_456)
    progress("notes", Change("add", "a.md", "id-a", "new file", 12_345))
    progress("notes", Change("failed", "b.md", "id-b", "not valid utf-8"))
    for _ in range(1000):
        progress("a-knowledge-base-with-a-long-name", Change("unchanged", "c.md", "id-c"))
    progress.close()
    lines = _screen_lines(screen.getvalue())
    assert lines and max(len(line) for line in lines) <= 80, lines
    *_, notes, long = lines  # the last frame: one line each, not wrapped
    assert re.fullmatch(
        r"notes +━* 2/12 files, 12345 chunks, 1 failed +\d+\.\d files/s \S.*", notes
    )
    assert long.startswith("a-knowledge-bas… ") and "1000/123456 files" in long


def _rate_shown(changes: list[Change]) -> float:
    screen = io.StringIO()
    progress = Progress(screen, console=_console(screen))
    progress.files_found("notes", len(changes))
    for change in changes:
        progress("notes", change)
    progress.close()
    return float(_screen_lines(screen.getvalue())[-1].split(" failed ")[1].split()[0])


def test_the_rate_counts_only_files_processed_not_unchanged_or_skipped_ones() -> None:
    unchanged = [Change("unchanged", f"{i}.md", f"id-{i}") for i in range(1000)]
    skipped = [
        Change("skipped", "b.png", "id-b", "the model embeds text only"),
        Change("unsupported", "c.bin", "id-c", "unknown file type"),
    ]
    assert _rate_shown(unchanged + skipped) == 0.0  # was thousands of files/s
    assert _rate_shown([*unchanged, Change("add", "d.md", "id-d", "new file", 1)]) > 0
    assert _rate_shown([*unchanged, Change("empty", "e.md", "id-e", "nothing to index")]) > 0


def test_log_records_print_through_the_display_not_into_it() -> None:
    screen = io.StringIO()
    root = logging.getLogger()
    raw = logging.StreamHandler(screen)  # what `main`'s logging.basicConfig sets up
    raw.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    root.addHandler(raw)
    try:
        progress = Progress(screen, console=_console(screen))
        progress.files_found("notes", 2)
        logging.getLogger("ragflow_config.pipeline").warning("a symlink was skipped")
        assert raw not in root.handlers  # displaced while the display is live
        progress.close()
        assert raw in root.handlers
    finally:
        root.removeHandler(raw)
    shown = screen.getvalue()
    # Once, through the console, which prints it above the display and redraws it after.
    assert shown.count("a symlink was skipped") == 1
    lines = _screen_lines(shown)
    warning = lines.index("WARNING ragflow_config.pipeline: a symlink was skipped")
    assert any(line.startswith("notes ") for line in lines[warning + 1 :])
