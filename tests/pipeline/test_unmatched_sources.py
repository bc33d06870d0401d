"""A source whose patterns match no file: `run` names it with its patterns, and fails
while the collection does not exist yet (exit 1, nothing written); once it exists, a
warning, with what the files' absence deletes left to the deletion guard.

Real folders, the hashing model and Qdrant's local mode, through the command line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _git_repository import repository

from ragflow_config.cli import main

PIPELINE = """\
version: 1
vector_stores:
  disk: {type: qdrant, parameters: {path: store}}
embeddings:
  model: {type: hashing, parameters: {dimensions: 32}}
knowledge_bases:
  - name: docs
    sources:
      - {path: corpus, include: ["**/*.md"]}
      - {path: extra, include: ["*.txt"], exclude: ["draft*"]}
    embedding: model
    vector_store: disk
    collection: docs
    prune: true
"""
CORPUS = "source corpus (include **/*.md) matched no file"
EXTRA = "source extra (include *.txt; exclude draft*) matched no file"


def folder(tmp_path: Path) -> Path:
    for name in ("corpus", "extra"):
        (tmp_path / name).mkdir()
    (tmp_path / "corpus" / "notes.rst").write_text("Not Markdown.\n", encoding="utf-8")
    (tmp_path / "extra" / "draft.txt").write_text("Excluded.\n", encoding="utf-8")
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    return path


def outputs(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_a_first_run_whose_sources_match_nothing_fails_naming_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = folder(tmp_path)
    assert main(["run", str(pipeline), "--workers", "0"]) == 1
    out, err = outputs(capsys)
    assert err.splitlines() == [
        f"docs: FAILED: {CORPUS}",
        f"docs: FAILED: {EXTRA}",
        "docs: nothing written: collection docs does not exist yet; check the path and "
        "the patterns",
    ]
    assert out.startswith("docs: did add 0, update 0, delete 0;")

    assert main(["run", str(pipeline), "--workers", "0", "--json"]) == 1
    document = json.loads(outputs(capsys)[0])
    assert document["failed"] is True
    [kb] = document["knowledge_bases"]
    assert kb["unmatched_sources"] == [CORPUS, EXTRA]
    assert kb["no_files"] == "nothing written: collection docs does not exist yet"

    assert main(["plan", str(pipeline)]) == 1  # the exit code the run would give
    assert f"docs: FAILED: {CORPUS}" in outputs(capsys)[1]


def test_one_source_of_two_matching_nothing_fails_a_first_run_before_it_writes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = folder(tmp_path)
    (tmp_path / "extra" / "kept.txt").write_text("Pears are green.\n", encoding="utf-8")
    assert main(["run", str(pipeline), "--workers", "0"]) == 1
    out, err = outputs(capsys)
    assert f"docs: FAILED: {CORPUS}" in err and "extra" not in err
    assert "0 chunks written" in out
    (tmp_path / "corpus" / "found.md").write_text("Apples are red.\n", encoding="utf-8")
    assert main(["run", str(pipeline), "--workers", "0", "--json"]) == 0
    [kb] = json.loads(outputs(capsys)[0])["knowledge_bases"]
    assert kb["counts"]["add"] == 2  # both new: the failed run wrote nothing


def test_an_existing_collection_gets_a_warning_and_the_guard_judges_the_deletion(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = folder(tmp_path)
    for i in range(5):
        (tmp_path / "corpus" / f"n{i}.md").write_text(f"Note {i} on apples.\n", encoding="utf-8")
    (tmp_path / "extra" / "kept.txt").write_text("Pears are green.\n", encoding="utf-8")
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    assert "matched no file" not in outputs(capsys)[1]

    (tmp_path / "extra" / "kept.txt").unlink()  # one source emptied: 1 of 6 documents goes
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    out, err = outputs(capsys)
    assert f"docs: warning: {EXTRA}" in err.splitlines()
    assert "delete 1" in out

    for i in range(5):  # the other emptied too: all 5 left would go, which the guard refuses
        (tmp_path / "corpus" / f"n{i}.md").unlink()
    assert main(["run", str(pipeline), "--workers", "0"]) == 1
    assert "max_delete_fraction" in outputs(capsys)[1]


def test_eval_against_a_ref_fails_naming_the_source_rather_than_measure_an_empty_index(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    pipeline = repo / "pipeline.yaml"
    text = pipeline.read_text(encoding="utf-8")
    pipeline.write_text(
        text.replace("[{path: corpus}]", '[{path: corpus, include: ["*.rst"]}]'), encoding="utf-8"
    )
    outputs(capsys)
    assert main(["eval", str(pipeline), "--against", "main"]) == 1
    assert "notes: source corpus (include *.rst) matched no file" in outputs(capsys)[1]
