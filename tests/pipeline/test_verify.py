"""`ragflow-config verify` and `plan` against what a run would really do with each file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ragflow_config.cli import main

from .test_run import BROKEN, GOOD, make_project


def test_files_the_pipeline_skips_are_not_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = make_project(tmp_path)  # an unsupported and an undecodable file among them
    (tmp_path / "docs" / "empty.txt").write_bytes(b"")
    (tmp_path / "docs" / "blank.md").write_text("\n   \n\n", encoding="utf-8")
    # The undecodable file fails, skipped under `on_error: skip`: reported, not a failure.
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    capsys.readouterr()

    # The run remembered them (issue 52): verify and plan count them without parsing,
    # and name them with --retry-failed (plan) or --strict.
    assert main(["verify", str(pipeline)]) == 0
    out = capsys.readouterr().out
    assert BROKEN not in out
    assert (
        f"docs: {len(GOOD)} documents in sync, 0 drifted, 1 skipped (on_error: skip) "
        "(1 remembered, not parsed again)"
    ) in out
    assert main(["verify", str(pipeline), "--strict"]) == 1
    assert f"docs: skipped    {BROKEN}  (not valid utf-8 at byte 3" in capsys.readouterr().out

    assert main(["plan", str(pipeline)]) == 0  # in sync: no run would store them either
    out = capsys.readouterr().out
    assert "empty.txt" not in out and BROKEN not in out
    assert "docs: 4 files yielded nothing when last tried" in out  # with the unsupported one
    assert main(["plan", str(pipeline), "--retry-failed"]) == 0
    out = capsys.readouterr().out
    assert "empty       empty.txt  (nothing to index in the file)" in out
    assert f"skipped     {BROKEN}" in out


def test_a_source_file_that_cannot_be_read_is_drift(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = make_project(tmp_path, broken=False)
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    # A link to a file that is not there (a generated file not yet built): the
    # tests run as root, which permissions do not stop from reading.
    os.symlink("generated/api.md", tmp_path / "docs" / "api.md")
    capsys.readouterr()

    assert main(["verify", str(pipeline)]) == 1
    out = capsys.readouterr().out
    assert "docs: unreadable api.md  (cannot read the file: No such file or directory)" in out
    assert f"docs: {len(GOOD)} documents in sync, 1 drifted" in out
