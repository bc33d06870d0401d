"""action/report.py, summary.py and comment.py in the order the action runs them.

`validate` is the real command; `plan` and `eval` (their `--format markdown` is the
CLI's, tested with it) are a stand-in `ragflow-config` early on PATH, which logs its
arguments and prints Markdown, so the tests choose what each command says and exits.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ._pipelines import invalid_pipeline, valid_pipeline
from .conftest import outputs, run_script

MARKER = "<!-- ragflow-config -->"

STAND_IN = """\
#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["STAND_IN_LOG"], "a") as log:
    log.write(json.dumps(args) + "\\n")
command = args[0]
if command == "plan":
    print(f"#### `{{args[1]}}`: 12 documents re-embedded")
    print()
    print("| fingerprint | old | new |")
    print("|---|---|---|")
    print("| chunker.parameters.chunk_size | 256 | " + os.environ.get("CHUNK_SIZE", "128") + " |")
elif command == "eval":
    print("| metric | base | PR | change | p |")
    print("|---|---|---|---|---|")
    print("| nDCG@10 | 0.610 | 0.580 | -0.030 | 0.01 |")
    print("a warning about ```fences```", file=sys.stderr)
elif command == "validate":
    print(f"{{len(args) - 1}} file(s) valid")
sys.exit(int(os.environ.get("EXIT_" + command.upper(), "0")))
"""


@pytest.fixture
def step_env(tmp_path: Path, github_env: dict[str, str]) -> dict[str, str]:
    """A step's environment with the real ragflow-config on PATH."""
    venv_bin = str(Path(sys.executable).parent)
    return {**github_env, "PATH": venv_bin + os.pathsep + os.environ.get("PATH", "")}


@pytest.fixture
def stand_in_env(tmp_path: Path, step_env: dict[str, str]) -> dict[str, str]:
    """A step's environment with the stand-in ragflow-config first on PATH."""
    bin_dir = tmp_path / "stand-in"
    bin_dir.mkdir()
    program = bin_dir / "ragflow-config"
    program.write_text(STAND_IN.format(python=sys.executable))
    program.chmod(0o755)
    log = tmp_path / "calls.jsonl"
    log.touch()
    return {
        **step_env,
        "PATH": f"{bin_dir}{os.pathsep}{step_env['PATH']}",
        "STAND_IN_LOG": str(log),
    }


def _calls(env: dict[str, str]) -> list[list[str]]:
    return [json.loads(line) for line in Path(env["STAND_IN_LOG"]).read_text().splitlines()]


def _report(
    tmp_path: Path, env: dict[str, str], *args: str
) -> tuple[subprocess.CompletedProcess[str], str]:
    out = tmp_path / "runner-temp" / "ragflow-config" / "report.md"
    done = run_script("report.py", "--out", str(out), *args, env=env, cwd=tmp_path)
    return done, out.read_text(encoding="utf-8") if out.exists() else ""


def test_validate_plan_and_eval_on_a_pull_request_then_summary_and_one_comment(
    tmp_path, stand_in_env, fake_github
):
    fake, url = fake_github
    env = {**stand_in_env, "GITHUB_API_URL": url}
    valid_pipeline(tmp_path / "pipelines", "kb.yaml")

    done, text = _report(
        tmp_path, env, "--commands", "validate plan eval", "--", "pipelines/kb.yaml"
    )
    assert done.returncode == 0, done.stderr
    # eval compares with the PR's base branch (GITHUB_BASE_REF), each file on its own.
    assert _calls(env) == [
        ["validate", "pipelines/kb.yaml"],
        ["plan", "pipelines/kb.yaml", "--format", "markdown"],
        ["eval", "pipelines/kb.yaml", "--against", "origin/main", "--format", "markdown"],
    ]
    assert outputs(env)["exit-code"] == "0"
    report = Path(outputs(env)["report"])
    assert report.read_text() == text
    assert text.startswith("## ragflow-config\n\n✅ 3 command(s) succeeded.\n")
    assert "### `ragflow-config plan pipelines/kb.yaml --format markdown`" in text
    assert "| chunker.parameters.chunk_size | 256 | 128 |" in text
    assert "| nDCG@10 | 0.610 | 0.580 | -0.030 | 0.01 |" in text
    # What a command said on stderr is kept, in a fence its backticks cannot close.
    assert (
        "<details><summary>messages</summary>\n\n````text\na warning about ```fences```\n````"
        in text
    )
    assert (
        "<sub>commit 0123456 · [workflow run](https://github.com/octo-org/knowledge/actions/runs/4242)</sub>"
        in text
    )
    # Each command's output is in the job's log, grouped.
    assert "::group::ragflow-config plan pipelines/kb.yaml --format markdown: exit 0" in done.stdout

    summary = run_script("summary.py", str(report), env=env)
    assert summary.returncode == 0, summary.stderr
    assert Path(env["GITHUB_STEP_SUMMARY"]).read_text() == text

    comment = run_script("comment.py", str(report), env=env)
    assert comment.returncode == 0, comment.stderr
    [posted] = fake.ours()
    assert posted["body"] == f"{MARKER}\n{text}"

    # The next push: a new report, the same comment updated.
    env["CHUNK_SIZE"] = "64"
    done, text = _report(tmp_path, env, "--commands", "plan,eval", "pipelines/kb.yaml")
    assert done.returncode == 0, done.stderr
    assert run_script("comment.py", str(report), env=env).returncode == 0
    assert [c["body"] for c in fake.ours()] == [f"{MARKER}\n{text}"]
    assert "| chunker.parameters.chunk_size | 256 | 64 |" in text
    assert [m for m, _ in fake.calls()] == ["GET", "POST", "GET", "PATCH"]


def test_a_failed_command_is_in_the_report_and_its_code_in_the_outputs(
    tmp_path, stand_in_env, fake_github
):
    fake, url = fake_github
    env = {**stand_in_env, "GITHUB_API_URL": url, "EXIT_PLAN": "1"}
    valid_pipeline(tmp_path, "a.yaml")
    valid_pipeline(tmp_path, "b.yaml")

    done, text = _report(tmp_path, env, "--commands", "plan eval", "a.yaml", "b.yaml")
    # The script itself succeeds so that the summary and the comment are still written;
    # the action's last step fails the job with the code.
    assert done.returncode == 0, done.stderr
    assert outputs(env)["exit-code"] == "1"
    assert text.startswith(
        "## ragflow-config\n\n❌ 2 of 4 command(s) failed; first "
        "`ragflow-config plan a.yaml --format markdown` (exit 1).\n"
    )
    assert text.count("**Failed** (exit 1).") == 2
    assert len(_calls(env)) == 4  # eval still ran on both files
    comment = run_script("comment.py", outputs(env)["report"], env=env)
    assert comment.returncode == 0
    assert "❌ 2 of 4 command(s) failed" in fake.ours()[0]["body"]

    # Outside the action, --fail exits with the commands' code.
    again, _ = _report(tmp_path, env, "--fail", "--commands", "plan", "a.yaml")
    assert again.returncode == 1


def test_an_invalid_file_fails_validate_with_file_line_and_skips_the_rest(tmp_path, step_env):
    valid_pipeline(tmp_path / "pipelines", "kb.yaml")
    invalid_pipeline(tmp_path / "pipelines")
    done, text = _report(
        tmp_path,
        step_env,
        "--commands",
        "validate plan",
        "pipelines/kb.yaml",
        "pipelines/broken.yaml",
    )
    assert done.returncode == 0, done.stderr
    # Whatever code validate gives an invalid file (the CLI's exit-code contract decides it).
    code = outputs(step_env)["exit-code"]
    assert code != "0"
    assert f"**Failed** (exit {code})." in text
    assert "pipelines/broken.yaml:4:5: knowledge_bases[0].chunk: unknown key 'chunk'" in text
    assert "pipelines/broken.yaml:3:5: knowledge_bases[0]: missing required key 'embedding'" in text
    assert text.count("Not run: `validate` failed.") == 2
    assert "❌ 1 of 3 command(s) failed" in text


def test_the_real_validate_on_a_valid_file(tmp_path, step_env):
    valid_pipeline(tmp_path, "kb.yaml")
    done, text = _report(tmp_path, step_env, "--commands", "validate", "kb.yaml")
    assert done.returncode == 0, done.stderr
    assert outputs(step_env)["exit-code"] == "0"
    assert "```text\n1 file(s) valid\n```" in text


def test_on_a_push_eval_runs_without_a_comparison(tmp_path, stand_in_env):
    env = {k: v for k, v in stand_in_env.items() if k != "GITHUB_BASE_REF"}
    env["GITHUB_EVENT_NAME"] = "push"
    valid_pipeline(tmp_path)
    done, _ = _report(tmp_path, env, "--commands", "eval", "kb.yaml")
    assert done.returncode == 0, done.stderr
    assert _calls(env) == [["eval", "kb.yaml", "--format", "markdown"]]
    done, _ = _report(tmp_path, env, "--commands", "eval", "--base", "v1.2", "kb.yaml")
    assert _calls(env)[-1] == ["eval", "kb.yaml", "--against", "v1.2", "--format", "markdown"]


def test_a_base_branch_missing_from_a_shallow_checkout_is_fetched(tmp_path, stand_in_env):
    def git(*args: str, cwd: Path) -> str:
        return subprocess.run(
            ["git", *args], cwd=cwd, check=True, capture_output=True, text=True
        ).stdout

    upstream = tmp_path / "upstream"
    upstream.mkdir()
    git("init", "-q", "-b", "main", cwd=upstream)
    valid_pipeline(upstream)
    git("add", ".", cwd=upstream)
    git(
        "-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "main", cwd=upstream
    )
    work = tmp_path / "work"
    git("clone", "-q", str(upstream), str(work), cwd=tmp_path)
    git("update-ref", "-d", "refs/remotes/origin/main", cwd=work)

    out = tmp_path / "report.md"
    done = run_script(
        "report.py", "--commands", "eval", "--out", str(out), "kb.yaml", env=stand_in_env, cwd=work
    )
    assert done.returncode == 0, done.stderr
    assert "fetching origin/main for eval --against" in done.stderr
    assert (
        git("rev-parse", "origin/main", cwd=work).strip()
        == git("rev-parse", "HEAD", cwd=upstream).strip()
    )


def test_a_missing_program_and_usage_errors_are_clear(tmp_path, github_env):
    env = {**github_env, "PATH": str(tmp_path / "empty")}
    valid_pipeline(tmp_path)
    done, text = _report(tmp_path, env, "--commands", "plan", "kb.yaml")
    assert done.returncode == 0
    assert outputs(env)["exit-code"] == "127"
    assert "ragflow-config: command not found (is the package installed?)" in text

    for args, message in [
        (
            ["--commands", "deploy", "kb.yaml"],
            "unknown command 'deploy'; choose from validate, plan, eval, run",
        ),
        (["--commands", " ", "kb.yaml"], "no command given"),
        (["--commands", "plan"], "no pipeline file given"),
    ]:
        bad, _ = _report(tmp_path, env, *args)
        assert bad.returncode == 2
        assert message in bad.stderr


def test_summary_needs_its_variable_and_cuts_a_long_report(tmp_path, github_env):
    report = tmp_path / "long.md"
    report.write_text("".join(f"| row {n:07} |\n" for n in range(80_000)))  # ~1.2 MB
    done = run_script("summary.py", str(report), env=github_env)
    assert done.returncode == 0, done.stderr
    written = Path(github_env["GITHUB_STEP_SUMMARY"]).read_text()
    assert len(written.encode()) <= 1024 * 1024
    assert written.endswith("|\n\n*(cut: the report is longer than a job summary holds)*\n")

    unset = {k: v for k, v in github_env.items() if k != "GITHUB_STEP_SUMMARY"}
    missing = run_script("summary.py", str(report), env=unset)
    assert missing.returncode == 1
    assert "GITHUB_STEP_SUMMARY is not set" in missing.stderr
