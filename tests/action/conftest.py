"""Running the action's scripts as the action runs them: a subprocess each, with the
variables GitHub sets, against a fake GitHub API on loopback."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._fake_github import FakeGitHub, FakeGitHubServer

ROOT = Path(__file__).resolve().parents[2]
ACTION = ROOT / "action"
TOKEN = "ghs_test-token-0123456789"
REPOSITORY = "octo-org/knowledge"
NUMBER = 17


def run_script(name: str, *args: str, env: dict[str, str], cwd: Path | None = None):
    """``python action/NAME ARGS...`` as a step runs it; its CompletedProcess."""
    return subprocess.run(
        [sys.executable, str(ACTION / name), *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )


def pull_request_event(number: int = NUMBER) -> dict[str, object]:
    """The parts of a `pull_request` event's payload the scripts read, and some around them."""
    return {
        "action": "synchronize",
        "number": number,
        "pull_request": {
            "number": number,
            "base": {"ref": "main"},
            "head": {"ref": "feature/chunk-size"},
        },
        "repository": {"full_name": REPOSITORY},
    }


@pytest.fixture
def github_env(tmp_path: Path) -> dict[str, str]:
    """The environment of a step in a `pull_request` job (no API URL yet)."""
    event = tmp_path / "event.json"
    event.write_text(json.dumps(pull_request_event()))
    (tmp_path / "summary.md").touch()
    (tmp_path / "output.txt").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "RUNNER_"))}
    env.update(
        GITHUB_ACTIONS="true",
        GITHUB_EVENT_NAME="pull_request",
        GITHUB_EVENT_PATH=str(event),
        GITHUB_REPOSITORY=REPOSITORY,
        GITHUB_STEP_SUMMARY=str(tmp_path / "summary.md"),
        GITHUB_OUTPUT=str(tmp_path / "output.txt"),
        GITHUB_TOKEN=TOKEN,
        GITHUB_BASE_REF="main",
        GITHUB_SHA="0123456789abcdef0123456789abcdef01234567",
        GITHUB_SERVER_URL="https://github.com",
        GITHUB_RUN_ID="4242",
        RUNNER_OS="Linux",
        RUNNER_TEMP=str(tmp_path / "runner-temp"),
    )
    return env


@pytest.fixture
def fake_github() -> Iterator[tuple[FakeGitHub, str]]:
    """The fake API and its URL (GITHUB_API_URL); no request may have been a problem."""
    fake = FakeGitHub(token=TOKEN, repository=REPOSITORY, number=NUMBER)
    with FakeGitHubServer(fake) as url:
        yield fake, url
    assert fake.problems == []


def outputs(env: dict[str, str]) -> dict[str, str]:
    """The step outputs written to $GITHUB_OUTPUT (single-line ones)."""
    lines = Path(env["GITHUB_OUTPUT"]).read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line and "<<" not in line)
