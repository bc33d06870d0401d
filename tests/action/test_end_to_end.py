"""A pull request that halves `chunk_size`, through the action's own scripts and the real CLI.

A git repository whose `origin` is a bare clone: main indexed with `chunk_size: 256`, the
PR branch checked out with `chunk_size: 128`. report.py runs the real `validate`, `plan`
and `eval --against origin/main` (GITHUB_BASE_REF is `main`, as on a pull request), and
comment.py writes to a fake GitHub API on loopback. A second push changes the branch
again, and the same comment is updated.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from _git_repository import git, pipeline_text, repository

from .conftest import outputs, run_script

MARKER = "<!-- ragflow-config -->"


def _cli(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    program = Path(sys.executable).parent / "ragflow-config"
    return subprocess.run(
        [str(program), *args], cwd=repo, capture_output=True, text=True, timeout=300
    )


def _pull_request(tmp_path: Path) -> Path:
    """The PR's checkout, with `origin` holding main and the branch, and main's index built."""
    repo = repository(tmp_path)
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "--quiet", "--bare", str(repo), str(origin)], check=True)
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "fetch", "--quiet", "origin")
    # main's CI job ran before: the collection main serves holds chunks of 256 tokens.
    git(repo, "checkout", "--quiet", "main")
    built = _cli(repo, "run", "pipeline.yaml")
    assert built.returncode == 0, built.stderr
    git(repo, "checkout", "--quiet", "pr")
    return repo


def _served(repo: Path) -> dict[str, tuple[int, int]]:
    """Each document main serves: its chunk count and the chunk size it was built with."""
    listed = _cli(repo, "list", "pipeline.yaml", "notes", "--json")
    assert listed.returncode == 0, listed.stderr
    return {
        doc["source"]: (
            doc["chunk_count"],
            doc["metadata"]["ragflow"]["settings"]["chunker"]["parameters"]["chunk_size"],
        )
        for doc in json.loads(listed.stdout)["documents"]
    }


def _action(repo: Path, env: dict[str, str]) -> tuple[str, str]:
    """The action's three steps on the checkout: the report's text and the comment's body."""
    report = repo.parent / "runner-temp" / "ragflow-config" / "report.md"
    done = run_script(
        "report.py",
        "--commands",
        "validate plan eval",
        "--out",
        str(report),
        "--",
        "pipeline.yaml",
        env=env,
        cwd=repo,
    )
    assert done.returncode == 0, done.stderr
    assert outputs(env)["exit-code"] == "0", report.read_text()
    assert run_script("summary.py", str(report), env=env).returncode == 0
    comment = run_script("comment.py", str(report), env=env)
    assert comment.returncode == 0, comment.stderr
    return report.read_text(encoding="utf-8"), comment.stdout


def test_a_pull_request_gets_one_comment_with_its_plan_and_quality_change_updated_per_push(
    tmp_path, github_env, fake_github
):
    fake, url = fake_github
    repo = _pull_request(tmp_path)
    served = _served(repo)
    assert {size for _, size in served.values()} == {256}
    env = {
        **github_env,
        "GITHUB_API_URL": url,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
    }

    text, _ = _action(repo, env)
    [posted] = fake.ours()
    assert posted["body"] == f"{MARKER}\n{text}"
    # The plan: the fingerprint change, old → new, and every document embedded again.
    assert "`chunker.parameters.chunk_size 256 → 128`" in text
    assert "| 0 | 6 | 0 | 0 | 0 | 0 |" in text  # add, update, delete, repair, unchanged, skipped
    assert "**To embed:** 6 documents" in text
    [rebuild] = [
        line for line in text.splitlines() if line.startswith("- **Rebuild** beside `notes`:")
    ]
    assert "to embed into `notes__" in rebuild and "(chunker changed), then switch;" in rebuild
    # The quality change: base and branch side by side, with p-values and a verdict.
    assert "### Retrieval quality: `pipeline.yaml` against `origin/main`" in text
    assert "| metric | base | this branch | change | p-value | significant? |" in text
    ndcg = re.search(
        r"^\| ndcg@3 \| ([\d.]+) \| ([\d.]+) \| ([-+][\d.]+) \| ([\d.]+) \| (\w+) \|$", text, re.M
    )
    assert ndcg is not None, text
    base, branch, change, p_value, _ = ndcg.groups()
    assert abs(float(branch) - float(base) - float(change)) < 1e-3
    assert 0 < float(p_value) <= 1
    assert "**Verdict:" in text
    # Neither plan nor eval wrote into the collection main serves.
    assert _served(repo) == served

    # The next push: the branch changes again; the one comment now says so.
    (repo / "pipeline.yaml").write_text(pipeline_text(64), encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", "pr: chunk_size 64")
    text, _ = _action(repo, env)
    assert [c["body"] for c in fake.ours()] == [f"{MARKER}\n{text}"]
    assert "`chunker.parameters.chunk_size 256 → 64`" in text
    assert "256 → 128" not in text
    assert [method for method, _ in fake.calls()] == ["GET", "POST", "GET", "PATCH"]
