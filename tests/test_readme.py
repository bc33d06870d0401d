"""The README's code runs as written: each Python block as a script, the pipeline file validates."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ragflow_config.pipeline._validate import check_file

REPO = Path(__file__).parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", README, flags=re.MULTILINE | re.DOTALL)


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(blocks("python"))))
def test_each_python_block_runs_as_a_script(index: int, tmp_path: Path) -> None:
    """In a copy of the pipelines folder, so the sample store it writes lands in tmp_path."""
    shutil.copytree(REPO / "pipelines", tmp_path / "pipelines")
    script = tmp_path / "example.py"
    script.write_text(blocks("python")[index], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip(), "the example printed nothing"


def test_the_pipeline_file_example_is_valid(tmp_path: Path) -> None:
    [example] = [block for block in blocks("yaml") if "knowledge_bases:" in block]
    path = tmp_path / "pipelines" / "handbook.yaml"
    path.parent.mkdir()
    path.write_text(example, encoding="utf-8")
    loaded, issues = check_file(path)
    assert issues == [] and loaded is not None
    assert [kb.name for kb in loaded.spec.knowledge_bases] == ["handbook"]


def test_the_readme_has_the_blocks_these_tests_run() -> None:
    assert len(blocks("python")) >= 2
