"""Fixtures for the declarative pipeline tests: real YAML files on disk, checked as the CLI does."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from ragflow_config.pipeline import Registry, default_registry
from ragflow_config.pipeline._validate import check_file

FILES = Path(__file__).parent / "files"
REPO = Path(__file__).parents[2]

Check = Callable[[str], list[str]]


@pytest.fixture
def registry() -> Registry:
    return default_registry()


@pytest.fixture
def in_files(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work from the fixture folder, so issues name files as `bad_values.yaml`."""
    monkeypatch.chdir(FILES)
    return FILES


@pytest.fixture
def check(in_files: Path, registry: Registry) -> Check:
    """Validate a fixture file; return its issues as the CLI prints them."""

    def run(name: str) -> list[str]:
        loaded, issues = check_file(in_files / name, registry)
        assert (loaded is None) == bool(issues)
        return [str(issue) for issue in issues]

    return run


def registered(registry: Registry, kind: str) -> str:
    """The list an unknown-type message gives."""
    return ", ".join(registry.names(kind))  # type: ignore[arg-type]
