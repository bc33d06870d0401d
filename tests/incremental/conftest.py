"""Fixtures of the incremental-indexing tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._corpus import write_corpus


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    write_corpus(root, 30)
    return root
