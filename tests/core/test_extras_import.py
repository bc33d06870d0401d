"""``require`` imports an optional library with the garbage collector paused, then restores it.

A library's import makes objects that all live on; the collector's passes
meanwhile free nothing (issue 40: they were a tenth of a `search`). Checked by
what a real module sees while it is imported, not by time.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragflow_config._errors import MissingExtraError
from ragflow_config._extras import require

PROBE = "import gc\nCOLLECTING = gc.isenabled()\n"


@pytest.fixture
def probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module that notes whether the collector ran while it was imported."""
    name = "ragflow_gc_probe"
    (tmp_path / f"{name}.py").write_text(PROBE, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield name
    sys.modules.pop(name, None)


def test_the_collector_is_paused_for_the_import_and_running_after(probe: str) -> None:
    assert gc.isenabled()
    assert require(probe, "rag").COLLECTING is False
    assert gc.isenabled()


def test_a_caller_that_paused_it_finds_it_still_paused(probe: str) -> None:
    gc.disable()
    try:
        require(probe, "rag")
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_missing_library_names_its_extra_and_the_collector_runs_again() -> None:
    with pytest.raises(MissingExtraError, match=r"pip install 'ragflow-config\[hybrid\]'"):
        require("ragflow_no_such_library", "hybrid")
    assert gc.isenabled()
