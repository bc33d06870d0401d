"""`ragflow-config validate`: output lines, JSON and exit codes."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragflow_config.cli import main


def test_a_valid_file_exits_0(in_files: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "valid.yaml", "separate_scopes.yaml"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "2 file(s) valid\n"


def test_an_invalid_file_exits_2_with_one_line_per_issue_on_stderr(
    in_files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "valid.yaml", "bad_values.yaml", "overlap_too_large.yaml"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "bad_values.yaml:11:21: knowledge_bases[0].chunker.parameters.chunk_size: "
        "'big' is not of type 'integer'",
        "bad_values.yaml:12:18: knowledge_bases[0].chunker.parameters.overlap: "
        "-1 is less than the minimum of 0",
        "overlap_too_large.yaml:11:9: knowledge_bases[0].chunker.parameters: "
        "overlap (100) must be less than chunk_size (100)",
    ]


def test_json_lists_every_issue_with_its_place(
    in_files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--json", "bad_values.yaml", "syntax_tab.yaml"]) == 2
    document = json.loads(capsys.readouterr().out)
    assert document["files"] == [
        {"file": "bad_values.yaml", "valid": False},
        {"file": "syntax_tab.yaml", "valid": False},
    ]
    issues = document["issues"]
    assert issues[:2] == [
        {
            "file": "bad_values.yaml",
            "line": 11,
            "column": 21,
            "path": "knowledge_bases[0].chunker.parameters.chunk_size",
            "message": "'big' is not of type 'integer'",
        },
        {
            "file": "bad_values.yaml",
            "line": 12,
            "column": 18,
            "path": "knowledge_bases[0].chunker.parameters.overlap",
            "message": "-1 is less than the minimum of 0",
        },
    ]
    [syntax] = issues[2:]
    assert (syntax["file"], syntax["line"], syntax["column"], syntax["path"]) == (
        "syntax_tab.yaml",
        4,
        1,
        "",
    )
    assert (
        syntax["message"] == "YAML syntax: a tab in the indentation: indent with spaces, not tabs"
    )


def test_json_of_a_valid_file_has_no_issues(
    in_files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["validate", "--json", "valid.yaml"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "files": [{"file": "valid.yaml", "valid": True}],
        "issues": [],
        "warnings": [],
    }


def test_the_installed_script_exits_2_and_prints_the_issue(in_files: Path) -> None:
    script = shutil.which("ragflow-config", path=os.path.dirname(sys.executable))
    assert script, "the ragflow-config console script is not installed next to this Python"
    done = subprocess.run(
        [script, "validate", "overlap_too_large.yaml"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2  # a configuration error, as from every command
    assert (
        "overlap_too_large.yaml:11:9: knowledge_bases[0].chunker.parameters: "
        "overlap (100) must be less than chunk_size (100)\n"
    ) in done.stderr
