"""A git source against a bare repository served on loopback by `git daemon` (and by
file://), through the command line: commits that add, edit, rename and delete between
runs, a ref that moves backwards, a fetch that fails.

Debian's git, Qdrant's local mode and the hashing model.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragflow_config.sources import document_id

from ._runs import changes, counts, run, write_pipeline

SOURCE = """\
      - type: git
        parameters: {{url: "{url}", ref: {ref}, timeout_seconds: 30}}
        include: ["docs/**/*.md"]
"""
NAMES = [f"n{i}.md" for i in range(10)]


def git(where: Path, *arguments: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(where), *arguments], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


class Repository:
    """A bare repository, and a clone the test commits from and pushes."""

    def __init__(self, root: Path) -> None:
        self.bare = root / "served" / "handbook.git"
        self.bare.mkdir(parents=True)
        git(self.bare, "init", "--bare", "--quiet", "--initial-branch=main")
        self.work = root / "work"
        subprocess.run(["git", "clone", "--quiet", str(self.bare), str(self.work)], check=True)
        git(self.work, "config", "user.email", "test@example.com")
        git(self.work, "config", "user.name", "test")
        git(self.work, "checkout", "--quiet", "-b", "main")

    def commit(self, message: str) -> str:
        git(self.work, "add", "--all")
        git(self.work, "commit", "--quiet", "-m", message)
        git(self.work, "push", "--quiet", "--force", "origin", "HEAD:main")
        return git(self.work, "rev-parse", "HEAD")

    def write(self, name: str, text: str) -> None:
        path = self.work / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def repository(tmp_path: Path) -> Repository:
    repo = Repository(tmp_path / "git")
    for i, name in enumerate(NAMES):
        repo.write(name, f"# Note {i}\n\nNote {i} is about topic {i}.\n")
    (repo.work / "README.md").write_text("Not under docs/.\n", encoding="utf-8")
    (repo.work / "docs" / "link.md").symlink_to("n0.md")  # a symlink's text is never indexed
    repo.commit("first")
    return repo


@pytest.fixture
def daemon(repository: Repository) -> Iterator[str]:
    """`git daemon` serving the bare repository on 127.0.0.1; its URL."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    served = repository.bare.parent
    process = subprocess.Popen(
        [
            "git",
            "daemon",
            "--reuseaddr",
            "--export-all",
            "--listen=127.0.0.1",
            f"--port={port}",
            f"--base-path={served}",
            str(served),
        ],
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"git://127.0.0.1:{port}/handbook.git"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture
def git_calls(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A log of every git command the source runs: a `git` first on PATH that writes its
    arguments, then runs Debian's git."""
    real = shutil.which("git")
    folder = tmp_path / "bin"
    folder.mkdir()
    log = tmp_path / "git-calls.log"
    shim = folder / "git"
    shim.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    log.touch()
    return log


def blob_reads(log: Path) -> int:
    return sum(" cat-file blob " in f" {line}" for line in log.read_text().splitlines())


def pipeline(tmp_path: Path, url: str, ref: str = "main") -> Path:
    return write_pipeline(tmp_path, SOURCE.format(url=url, ref=ref))


def test_commits_that_add_edit_rename_and_delete_and_a_ref_moving_back(
    tmp_path: Path,
    repository: Repository,
    daemon: str,
    git_calls: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = pipeline(tmp_path, daemon)
    first = run(path, capsys)
    assert first["exit"] == 0 and counts(first) == {"add": 10}
    assert blob_reads(git_calls) == 10
    [kb] = first["knowledge_bases"]
    ids = {change["path"]: change["document_id"] for change in kb["changes"]}
    assert ids["docs/n1.md"] == document_id("docs", daemon, "docs/n1.md")
    assert counts(run(path, capsys)) == {"unchanged": 10}
    assert blob_reads(git_calls) == 10  # an unchanged tree: no file read again

    repository.write("n0.md", "# Note 0\n\nEdited: note 0 is now about apples.\n")
    repository.write("new.md", "# New\n\nA new note on pears.\n")
    git(repository.work, "mv", "docs/n1.md", "docs/moved.md")
    git(repository.work, "rm", "--quiet", "docs/n2.md")
    repository.commit("second")
    second = run(path, capsys)
    assert blob_reads(git_calls) == 10 + 3  # the edited, the new and the moved file
    assert changes(second) == {
        "docs/n0.md": "update",
        "docs/new.md": "add",
        "docs/moved.md": "add",
        "docs/n1.md": "delete",
        "docs/n2.md": "delete",
    }
    assert counts(run(path, capsys)) == {"unchanged": 10}

    # The branch forced back to the first commit: the run follows it back.
    first_commit = git(repository.work, "rev-list", "--max-parents=0", "HEAD")
    git(repository.work, "reset", "--quiet", "--hard", first_commit)
    git(repository.work, "push", "--quiet", "--force", "origin", "HEAD:main")
    back = run(path, capsys)
    assert changes(back) == {
        "docs/n0.md": "update",
        "docs/new.md": "delete",
        "docs/moved.md": "delete",
        "docs/n1.md": "add",
        "docs/n2.md": "add",
    }


def test_a_commit_id_as_ref_over_file_urls(
    tmp_path: Path, repository: Repository, capsys: pytest.CaptureFixture[str]
) -> None:
    first_commit = git(repository.work, "rev-parse", "HEAD")
    repository.write("later.md", "# Later\n\nWritten after the pinned commit.\n")
    repository.commit("second")
    path = pipeline(tmp_path, repository.bare.as_uri(), ref=first_commit)
    document = run(path, capsys)
    assert counts(document) == {"add": 10}
    assert "docs/later.md" not in changes(document)


def test_a_fetch_that_fails_deletes_nothing_and_names_the_source(
    tmp_path: Path, repository: Repository, daemon: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = pipeline(tmp_path, daemon)
    assert counts(run(path, capsys)) == {"add": 10}
    pipeline(tmp_path, daemon, ref="no-such-branch")
    failed = run(path, capsys)
    assert failed["exit"] == 1
    message = failed["error"]["message"]
    assert f"source {daemon} at no-such-branch: the fetch failed (git fetch: " in message
    assert "no-such-branch" in message and "nothing is pruned" in message
    pipeline(tmp_path, daemon)
    assert counts(run(path, capsys)) == {"unchanged": 10}
