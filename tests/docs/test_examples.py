"""The documentation's code works as written: each Python block runs as a script, each
pipeline file validates, and each marked pipeline fragment validates inside a minimal file."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from ragflow_config.pipeline._validate import check_file

from ._pages import REPO, Block, blocks

# Said with every failure, for whoever adds a block that is not meant to be whole.
NOT_WHOLE = (
    "A block that is not meant to be whole says so in an HTML comment on the line before its "
    "fence: see tests/docs/_pages.py (<!-- not run: why -->, <!-- pipeline fragment: "
    "knowledge_base -->, <!-- pipeline fragment: pipeline -->, <!-- not a pipeline: why -->)."
)

PYTHON = [block for block in blocks("python") if not (block.marker or "").startswith("not run:")]
YAML = blocks("yaml")

# What a fragment is validated inside: the smallest pipeline file with one knowledge base.
MINIMAL: dict[str, Any] = {
    "version": 1,
    "vector_stores": {"local": {"type": "qdrant", "parameters": {"path": "store"}}},
    "embeddings": {"hashing": {"type": "hashing"}},
    "knowledge_bases": [
        {
            "name": "docs",
            "sources": [{"path": "corpus"}],
            "embedding": "hashing",
            "vector_store": "local",
            "collection": "docs",
        }
    ],
}


def _pipeline_text(block: Block) -> str | None:
    """The file to validate for a YAML block, or None for a block marked as no pipeline."""
    marker = block.marker or ""
    if marker.startswith("not a pipeline:"):
        return None
    if not marker.startswith("pipeline fragment:"):
        return block.code
    fragment = yaml.safe_load(block.code)
    pipeline = yaml.safe_load(yaml.safe_dump(MINIMAL))
    where = marker.removeprefix("pipeline fragment:").strip()
    if where == "knowledge_base":
        pipeline["knowledge_bases"][0].update(fragment)
    elif where == "pipeline":
        pipeline.update(fragment)
    else:
        raise AssertionError(f"{block}: unknown fragment kind {where!r}")
    return yaml.safe_dump(pipeline, sort_keys=False)


@pytest.mark.slow
@pytest.mark.parametrize("block", PYTHON, ids=str)
def test_each_python_block_runs_as_a_script(block: Block, tmp_path: Path) -> None:
    """In a copy of the pipelines folder, so the sample store it writes lands in tmp_path."""
    shutil.copytree(REPO / "pipelines", tmp_path / "pipelines")
    script = tmp_path / "example.py"
    script.write_text(block.code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, f"{block}: {done.stderr}\n{NOT_WHOLE}"
    assert done.stdout.strip(), f"{block}: the example printed nothing"


@pytest.mark.parametrize("block", YAML, ids=str)
def test_each_pipeline_example_is_valid(block: Block, tmp_path: Path) -> None:
    text = _pipeline_text(block)
    if text is None:
        return  # marked as no pipeline file, with its reason, on the page
    path = tmp_path / "pipelines" / "example.yaml"
    path.parent.mkdir()
    path.write_text(text, encoding="utf-8")
    loaded, issues = check_file(path)
    assert issues == [], f"{block}: " + "\n".join(map(str, issues)) + f"\n{NOT_WHOLE}"
    assert loaded is not None


def test_the_readme_has_a_whole_pipeline_example() -> None:
    readme = [block for block in YAML if block.page.name == "README.md"]
    assert [block.marker for block in readme] == [None]
    assert "knowledge_bases:" in readme[0].code


def test_the_pages_have_the_blocks_these_tests_run() -> None:
    assert len(PYTHON) >= 3
    assert sum(block.marker is not None for block in YAML) >= 5
