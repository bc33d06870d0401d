"""A git repository at a ref as a source, through the `git` command line.

Each run fetches the ref shallowly (``--depth 1``) into a bare repository kept
in the pipeline's ``.cache/sources/git/``, and lists the tree of what it
fetched: every file's blob id is its version marker, so a file whose blob is
the stored one is unchanged without being read, and a rename is a delete and
an add of the same bytes, as a local rename is.
"""

from __future__ import annotations

import errno
import hashlib
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from pydantic import Field

from .._component import ComponentParameters
from .._redact import redact_urls
from .base import ListedFile, SourceBase, SourceListingError, SourceSpec

_CACHE = Path(".cache", "sources", "git")
# Regular files only: not symlinks (120000), whose target text would be indexed, nor submodules.
_FILE_MODES = ("100644", "100755")


class GitSource(SourceBase):
    """The files of a git repository at a branch, tag or commit."""

    class Parameters(ComponentParameters):
        url: str = Field(
            pattern=r"^(https?|git|file)://[^\s@]+$",
            description="The repository: `https://`, `git://` or `file://`, without credentials "
            "(a private repository's come from git's own configuration: a credential helper, "
            "`GIT_CONFIG_*` variables).",
        )
        ref: str = Field(
            default="HEAD",
            pattern=r"^[A-Za-z0-9][A-Za-z0-9._/-]*$",
            description="A branch, a tag or a commit id; the remote's default branch when unset.",
        )
        timeout_seconds: float = Field(
            default=120, gt=0, le=3600, description="Time allowed to the fetch."
        )

    parameters: Parameters

    def origin(self, spec: SourceSpec) -> str:
        return self.parameters.url.rstrip("/")

    def files(self, spec: SourceSpec, folder: Path) -> Iterator[GitFile]:
        """Every regular file of the ref's tree that ``spec`` selects, in path order.

        The fetch and the listing finish before any file is yielded: a fetch that
        fails yields nothing, so nothing reads as deleted.
        """
        origin = self.origin(spec)
        repository = folder / _CACHE / hashlib.sha256(origin.encode()).hexdigest()[:16]
        try:
            if not (repository / "HEAD").exists():
                repository.mkdir(parents=True, exist_ok=True)
                _git(repository, "init", "--bare", "--quiet", timeout=60)
            _git(
                repository,
                "fetch",
                "--depth=1",
                "--no-tags",
                "--force",
                "--quiet",
                "--",
                self.parameters.url,
                self.parameters.ref,
                timeout=self.parameters.timeout_seconds,
            )
            tree = _git(repository, "ls-tree", "-r", "-z", "--long", "FETCH_HEAD", timeout=60)
        except (OSError, subprocess.SubprocessError, _GitError) as exc:
            raise SourceListingError(
                f"source {origin} at {self.parameters.ref}: the fetch failed ({exc}); "
                "nothing is pruned or written"
            ) from None
        for entry in tree.split(b"\0"):
            if not entry:
                continue
            header, _, path = entry.partition(b"\t")
            mode, _type, blob, size = header.split()
            relative = path.decode("utf-8", "surrogateescape")
            if mode.decode() in _FILE_MODES and spec.selects(relative):
                yield GitFile(
                    source=spec,
                    origin=origin,
                    relative=relative,
                    version=blob.decode(),
                    listed_size=int(size),
                    repository=repository,
                )


@dataclass(frozen=True, kw_only=True)
class GitFile(ListedFile):
    """A file of the fetched tree, read from the cached repository by its blob id."""

    repository: Path

    def read(self) -> bytes:
        try:
            return _git(self.repository, "cat-file", "blob", str(self.version), timeout=60)
        except (subprocess.SubprocessError, _GitError) as exc:
            raise OSError(errno.EIO, str(exc)) from None


class _GitError(Exception):
    """git exited with an error; the message is its stderr's last line, URLs redacted."""


def _git(repository: Path, *arguments: str, timeout: float) -> bytes:
    environment = {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",  # a missing credential fails rather than waits for a prompt
        "GIT_ASKPASS": "",
    }
    done = subprocess.run(
        ["git", "-C", str(repository), *arguments],
        capture_output=True,
        timeout=timeout,
        env=environment,
        check=False,
    )
    if done.returncode != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines() or ["no message"]
        raise _GitError(f"git {arguments[0]}: {redact_urls(lines[-1])}")
    return done.stdout
