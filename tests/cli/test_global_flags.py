"""`-v` and `-q` are accepted before the command and after it, on every command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from pipeline.test_run import make_project

from ragflow_config.cli._main import build_parser

COMMANDS = next(
    action.choices
    for action in build_parser()._actions
    if isinstance(getattr(action, "choices", None), dict)
)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_every_command_takes_the_global_flags_before_or_after_it(command: str) -> None:
    parser = build_parser()
    positionals = {
        action.dest: action
        for action in COMMANDS[command]._actions
        if not action.option_strings and action.required
    }
    required_options = [
        [action.option_strings[0], "x"]
        for action in COMMANDS[command]._actions
        if action.option_strings and action.required  # copy's --from
    ]
    args = ["x"] * len(positionals) + [word for option in required_options for word in option]
    quiet = "--quiet" if command == "chat" else "-q"  # chat's -q is its --question
    assert parser.parse_args([command, *args]).verbose is False
    assert parser.parse_args([command, *args]).quiet is False
    assert parser.parse_args(["-v", command, *args]).verbose is True
    assert parser.parse_args([command, *args, "-v"]).verbose is True
    assert parser.parse_args(["-q", command, *args]).quiet is True
    assert parser.parse_args([command, *args, quiet]).quiet is True
    # Given before the command and not after it, the flag stands.
    assert parser.parse_args(["-v", command, *args, quiet]).verbose is True


def test_quiet_silences_warnings_wherever_it_is_given(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    pipeline = make_project(project, broken=False)
    outside = tmp_path / "outside.txt"
    outside.write_text("not in the project's folder", encoding="utf-8")
    (project / "docs" / "link.txt").symlink_to(outside)  # skipped, with a warning

    def plan(*flags: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "ragflow_config.cli", *flags],
            capture_output=True,
            text=True,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert done.returncode in (0, 2), done.stderr
        return done.stderr

    assert "skipped" in plan("plan", str(pipeline))
    assert "skipped" not in plan("plan", str(pipeline), "-q")
    assert "skipped" not in plan("-q", "plan", str(pipeline))
