"""search --filter, reset, --version, the --json contract and closed pipes, as a user meets them."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ragflow_config import __version__
from ragflow_config.cli import main

PIPELINE = """\
version: 1
vector_stores:
  disk: {{type: qdrant, parameters: {{path: store}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: {dimensions}}}}}
knowledge_bases:
  - name: notes
    sources:
      - {{path: docs/red, metadata: {{colour: red, shade: {{depth: 1}}}}}}
      - {{path: docs/blue, metadata: {{colour: blue, shade: {{depth: 2}}}}}}
    embedding: model
    vector_store: disk
    collection: notes
"""


def project(folder: Path, dimensions: int = 64) -> Path:
    for colour in ("red", "blue"):
        (folder / "docs" / colour).mkdir(parents=True, exist_ok=True)
        for i in range(3):
            (folder / "docs" / colour / f"{colour}{i}.md").write_text(
                f"A {colour} note about apples, number {i}.\n", encoding="utf-8"
            )
    return write_pipeline(folder, dimensions)


def write_pipeline(folder: Path, dimensions: int) -> Path:
    path = folder / "pipeline.yaml"
    path.write_text(PIPELINE.format(dimensions=dimensions), encoding="utf-8")
    return path


def output_of(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_search_filter_narrows_by_metadata_and_nests_with_dots(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path)
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    output_of(capsys)

    query = ["search", str(pipeline), "notes", "apples", "--top-k", "10", "--json"]
    assert main([*query, "--filter", "colour=blue"]) == 0
    hits = json.loads(output_of(capsys)[0])["hits"]
    assert len(hits) == 3 and {h["chunk"]["metadata"]["colour"] for h in hits} == {"blue"}

    assert main([*query, "--filter", "shade.depth=1"]) == 0  # a JSON number, nested
    assert {h["chunk"]["source"] for h in json.loads(output_of(capsys)[0])["hits"]} == {
        "red0.md",
        "red1.md",
        "red2.md",
    }
    assert main([*query, "--filter", "colour=blue", "--filter", "shade.depth=1"]) == 0
    assert json.loads(output_of(capsys)[0]) == {"knowledge_base": "notes", "hits": []}

    assert main([*query, "--filter", "colour"]) == 2  # usage
    assert json.loads(output_of(capsys)[0]) == {
        "error": {"message": "--filter 'colour': expected KEY=VALUE"}
    }


def test_a_model_change_is_rebuilt_beside_rolled_back_and_reset(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path, dimensions=64)
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    write_pipeline(tmp_path, dimensions=32)  # another model: vectors of another length
    output_of(capsys)

    assert main(["plan", str(pipeline), "--check"]) == 1  # pending
    assert (
        "would rebuild beside the live collection notes (embedding, dimensions 64 -> 32 "
        in (output_of(capsys)[0])
    )
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    out = output_of(capsys)[0]
    assert "notes: rebuilt beside notes and switched to notes__" in out
    assert main(["list", str(pipeline), "notes"]) == 0
    assert re.search(
        r"^collections: notes__\w+ \(live\), notes \(previous\)$", output_of(capsys)[0], re.M
    )

    assert main(["rollback", str(pipeline), "notes", "--json"]) == 0
    rolled = json.loads(output_of(capsys)[0])
    assert rolled["live"] == "notes" and rolled["previous"][0].startswith("notes__")
    assert main(["list", str(pipeline), "notes"]) == 0  # this file's model built the previous one
    assert "(previous, read by this pipeline)" in output_of(capsys)[0]

    assert main(["reset", str(pipeline), "notes"]) == 2  # no terminal to confirm on
    assert "pass --yes to confirm" in output_of(capsys)[1]
    assert main(["reset", str(pipeline), "notes", "--yes"]) == 0
    assert "collection dropped" in output_of(capsys)[0]
    assert main(["rollback", str(pipeline), "notes"]) == 1
    assert "no previous collection to roll back to" in output_of(capsys)[1]
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    assert "did add 6," in output_of(capsys)[0]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit:
        main(["--version"])
    assert exit.value.code == 0
    assert output_of(capsys)[0].strip() == __version__


def test_json_errors_are_one_json_document_on_stdout(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("version: 1\nknowledge_bases: []\n", encoding="utf-8")
    assert main(["run", str(broken), "--json"]) == 2
    out, err = output_of(capsys)
    document = json.loads(out)
    assert document["error"]["message"] == "the pipeline file is invalid"
    [issue] = document["error"]["issues"]
    assert Path(issue["file"]).resolve() == broken
    assert (issue["line"], issue["path"]) == (2, "knowledge_bases")
    assert err == ""

    pipeline = project(tmp_path)
    assert main(["list", str(pipeline), "nowhere", "--json"]) == 2
    assert "nowhere" in json.loads(output_of(capsys)[0])["error"]["message"]


def test_one_chunk_is_not_one_chunks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pipeline = project(tmp_path)
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    output_of(capsys)
    assert main(["list", str(pipeline), "notes"]) == 0
    out = output_of(capsys)[0]
    assert "  1 chunk  " in out and "1 chunks" not in out
    assert out.rstrip().endswith("6 documents")


def test_a_closed_pipe_ends_quietly(tmp_path: Path) -> None:
    pipeline = project(tmp_path)
    for i in range(300):  # a listing larger than a pipe's buffer, so writing it must block
        (tmp_path / "docs" / "red" / f"more{i}.md").write_text(f"Note {i}.\n", encoding="utf-8")
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    # `list --json | head -c 10`: the reader goes away after a few bytes.
    done = subprocess.run(
        f"{sys.executable} -m ragflow_config.cli list {pipeline} notes --json | head -c 10",
        shell=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert len(done.stdout) == 10
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr
