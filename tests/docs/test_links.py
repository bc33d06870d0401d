"""The README stays short and its links lead somewhere; the site builds with no warning.

`mkdocs build --strict` fails on a page's broken link or anchor and on a page missing
from the nav, so the pages' links are checked by building the site; the README is not
part of the site and is checked here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from ._pages import README, REPO

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """A heading's anchor as GitHub renders it: lower case, punctuation dropped, - for spaces."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```$", "", page.read_text(encoding="utf-8"), flags=re.M | re.S)
    return {github_anchor(m[1]) for m in re.finditer(r"^#{1,6} (.+)$", text, flags=re.M)}


def test_the_readme_has_at_most_200_lines() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 200


def test_every_relative_link_in_the_readme_leads_to_a_file_and_anchor() -> None:
    text = README.read_text(encoding="utf-8")
    relative = [t for t in _LINK.findall(text) if not re.match(r"[a-z]+:", t)]
    assert relative, "the README links into the site"
    for target in relative:
        path, _, anchor = target.partition("#")
        file = (REPO / path) if path else README
        assert file.exists(), f"README.md links to {target}: no such file"
        if anchor:
            assert anchor in anchors(file), f"README.md links to {target}: no such heading"


def test_the_anchor_rule_is_githubs() -> None:
    assert github_anchor("Scanned pages (OCR)") == "scanned-pages-ocr"
    assert github_anchor("What `plan` and `verify` read") == "what-plan-and-verify-read"


@pytest.mark.slow
def test_the_site_builds_strict(tmp_path: Path) -> None:
    """Every page in the nav, every link and anchor found, the reference generated."""
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    reference = (tmp_path / "reference" / "index.html").read_text(encoding="utf-8")
    assert 'id="vector_store-pgvector"' in reference


def test_ci_runs_the_readmes_test_command_exactly() -> None:
    """The README's second command is what CI runs, so a fresh machine reproduces CI."""
    readme = README.read_text(encoding="utf-8")
    commands = re.findall(r"^```bash\n(.*?)\n```$", readme, flags=re.M | re.S)
    [test_command] = [c for c in commands if "pytest" in c]
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert test_command in ci
