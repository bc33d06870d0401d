"""The pre-commit hooks of .pre-commit-hooks.yaml, run by pre-commit itself.

pre-commit installs this repository into a virtualenv of its own (`language: python`:
pip installs it and its dependencies from the package index), as it would for a user.
The hook repository is a snapshot of the working tree (its package, pyproject.toml and
the hooks file), so uncommitted changes are what is tested. Two environments are
installed, each once: `pre-commit try-repo`'s, and the one of a user's config that adds
pymongo (`additional_dependencies`), which a valid file naming a MongoDB store needs:
validate reports a missing extra as an error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.action._pipelines import invalid_pipeline, valid_pipeline

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow

# What pip needs to build and install the package, and the hooks.
SNAPSHOT = ("pyproject.toml", "README.md", "LICENSE", "NOTICE", ".pre-commit-hooks.yaml")


def _git(*args: str, cwd: Path) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=test", "-c", "user.email=test@example.com", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def _pre_commit(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    program = shutil.which("pre-commit", path=str(Path(sys.executable).parent)) or "pre-commit"
    return subprocess.run(
        [program, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=900
    )


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """A git repository holding the working tree's package and hooks; its path and commit."""
    repo = tmp_path_factory.mktemp("hook-repo")
    listed = _git("ls-files", "--cached", "--others", "--exclude-standard", cwd=ROOT).splitlines()
    for name in listed:
        source = ROOT / name
        if (name in SNAPSHOT or name.startswith("ragflow_config/")) and source.is_file():
            (repo / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, repo / name)
    _git("init", "-q", cwd=repo)
    _git("add", ".", cwd=repo)
    _git("commit", "-qm", "snapshot", cwd=repo)
    return repo, _git("rev-parse", "HEAD", cwd=repo).strip()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """pre-commit's environment: its own store, shared by this module's tests."""
    variables = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PRE_COMMIT", "GIT_", "VIRTUAL_ENV"))
    }
    variables["PRE_COMMIT_HOME"] = str(tmp_path_factory.mktemp("pre-commit-home"))
    variables["PRE_COMMIT_COLOR"] = "never"
    return variables


def _project(folder: Path) -> Path:
    """A user's repository with fresh schemas/ (as this version writes them)."""
    folder.mkdir()
    _git("init", "-q", cwd=folder)
    subprocess.run(
        [sys.executable, "-m", "ragflow_config.cli", "schema", "--out", "schemas"],
        cwd=folder,
        check=True,
        capture_output=True,
    )
    return folder


def test_try_repo_fails_an_invalid_pipeline_file_with_file_line(tmp_path, hook_repo, env):
    project = _project(tmp_path / "project")
    invalid_pipeline(project / "pipelines")
    # Not pipeline files by the default `files:`: judged queries, other YAML.
    invalid_pipeline(project / "pipelines" / "eval", "queries.yaml")
    invalid_pipeline(project / "config", "app.yaml")
    _git("add", ".", cwd=project)

    done = _pre_commit("try-repo", str(hook_repo[0]), "--all-files", cwd=project, env=env)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "pipelines/broken.yaml:4:5: knowledge_bases[0].chunk: unknown key 'chunk'" in output
    assert (
        "pipelines/broken.yaml:3:5: knowledge_bases[0]: missing required key 'embedding'" in output
    )
    assert "queries.yaml" not in output and "app.yaml" not in output
    # The schema hook, run too, passes: schemas/ is what this version writes.
    assert "ragflow-config schemas are fresh" in output
    results = {
        line.split("..", 1)[0]: line.rsplit(".", 1)[-1]
        for line in output.splitlines()
        if line.startswith("ragflow-config") and ".." in line
    }
    assert results == {
        "ragflow-config validate": "Failed",
        "ragflow-config schemas are fresh": "Passed",
    }


def test_a_users_config_passes_valid_files_and_fails_invalid_ones_and_stale_schemas(
    tmp_path, hook_repo, env
):
    repo, rev = hook_repo
    project = _project(tmp_path / "project")
    (project / ".pre-commit-config.yaml").write_text(
        f"""\
repos:
  - repo: {repo}
    rev: {rev}
    hooks:
      - id: ragflow-config-validate
        additional_dependencies: [pymongo]
      - id: ragflow-config-schema
"""
    )
    valid_pipeline(project / "pipelines", "kb.yaml", store="mongodb")
    valid_pipeline(project / "search", "prod.ragflow.yaml", store="mongodb")
    _git("add", ".", cwd=project)

    passed = _pre_commit("run", "--all-files", cwd=project, env=env)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "ragflow-config validate" in passed.stdout and "Failed" not in passed.stdout

    # Only the files given are checked: here, by `pre-commit run --files` as a commit would.
    invalid_pipeline(project / "pipelines")
    _git("add", ".", cwd=project)
    failed = _pre_commit(
        "run", "ragflow-config-validate", "--files", "pipelines/broken.yaml", "pipelines/kb.yaml",
        cwd=project, env=env,
    )  # fmt: skip
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert (
        "pipelines/broken.yaml:4:5: knowledge_bases[0].chunk: unknown key 'chunk'" in failed.stdout
    )
    assert "kb.yaml:" not in failed.stdout

    stale = next((project / "schemas").rglob("*.schema.json"))
    stale.write_text(stale.read_text().replace('"description"', '"Description"', 1))
    _git("add", ".", cwd=project)  # pre-commit checks what is staged (it stashes the rest)
    schema = _pre_commit("run", "ragflow-config-schema", cwd=project, env=env)
    assert schema.returncode == 1, schema.stdout + schema.stderr
    assert f"{stale.relative_to(project)}: out of date" in schema.stdout
    assert "run `ragflow-config schema`" in schema.stdout
