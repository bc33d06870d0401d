"""Include and exclude patterns mean what they mean in a .gitignore; a source that finds nothing is an error."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragflow_config.cli import main
from ragflow_config.pipeline import Pipeline, RunOptions

PIPELINE = """\
version: 1
vector_stores:
  disk: {{type: qdrant, parameters: {{path: store}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: 32}}}}
knowledge_bases:
  - name: docs
    sources:
      - path: {path}
        include: {include}
        exclude: {exclude}
    embedding: model
    vector_store: disk
    collection: docs
"""

FILES = [
    "top.md",
    "guide/deep/nested.md",
    "copy1/a.txt",
    "copy4/b.txt",
    "copy5/c.txt",
    "drafts/wip.md",
    "notes.txt",
]


def project(folder: Path, include: list[str], exclude: list[str] = (), path: str = "docs") -> Path:
    for relative in FILES:
        (folder / "docs" / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / "docs" / relative).write_text(f"Text of {relative}.\n", encoding="utf-8")
    pipeline = folder / "pipeline.yaml"
    pipeline.write_text(
        PIPELINE.format(path=path, include=list(include), exclude=list(exclude)), encoding="utf-8"
    )
    return pipeline


@pytest.mark.parametrize(
    ("include", "exclude", "expected"),
    [
        (["*.md"], [], {"top.md", "guide/deep/nested.md", "drafts/wip.md"}),
        (["copy[1-4]/**"], [], {"copy1/a.txt", "copy4/b.txt"}),
        (["**/*.md", "!drafts/**"], [], {"top.md", "guide/deep/nested.md"}),
        (["**/*"], ["*.txt", "guide/"], {"top.md", "drafts/wip.md"}),
    ],
)
async def test_patterns_are_gitignore_style(
    tmp_path: Path, include: list[str], exclude: list[str], expected: set[str]
) -> None:
    pipeline = Pipeline.load(project(tmp_path, include, exclude))
    report = await pipeline.run(options=RunOptions(workers=0, dry_run=True))
    assert {change.path for change in report.knowledge_bases[0].changes} == expected


def test_validate_names_the_line_of_a_source_that_finds_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path, ["*.rst"])
    assert main(["validate", str(pipeline)]) == 2
    err = capsys.readouterr().err
    assert (
        ":10:" in err and "knowledge_bases[0].sources[0].include: no file in 'docs' matches" in err
    )


def test_validate_refuses_braces_which_gitignore_patterns_do_not_have(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path, ["*.md", "*.{txt,rst}"])
    assert main(["validate", str(pipeline)]) == 2
    err = capsys.readouterr().err
    assert "knowledge_bases[0].sources[0].include[1]: '*.{txt,rst}': braces are not" in err


def test_a_missing_source_folder_is_reported_at_its_line_by_validate_and_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path, ["**/*"], path="doc")
    for command in (["validate", str(pipeline)], ["run", str(pipeline), "--workers", "0"]):
        assert main(command) == 2  # the file, for validate as for run
        err = capsys.readouterr().err
        assert ":9:" in err and "sources[0].path: source folder 'doc'" in err
        assert "does not exist" in err
    assert not (tmp_path / "store").exists()  # the run stopped before it opened the store
