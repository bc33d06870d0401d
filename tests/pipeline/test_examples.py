"""Every example pipeline shipped in `pipelines/` is valid."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragflow_config.pipeline import Registry
from ragflow_config.pipeline._validate import check_file

from .conftest import REPO

EXAMPLES = sorted((REPO / "pipelines").glob("*.yaml"))


def test_there_are_examples() -> None:
    assert REPO / "pipelines" / "local.yaml" in EXAMPLES


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda path: path.name)
def test_the_example_is_valid(path: Path, registry: Registry) -> None:
    loaded, issues = check_file(path, registry)
    assert [str(issue) for issue in issues] == []
    assert loaded is not None and loaded.spec.knowledge_bases
