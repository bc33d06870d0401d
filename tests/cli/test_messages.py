"""What commands print beyond their reports: schema staleness, --shard errors, non-ASCII in JSON.

Written for survivors of the mutation run over `cli/` (issue 27, item 4); each
test failed on the mutants `bench/mutation.md` lists beside it.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

from ragflow_config.cli import main

from ._terminal import Terminal
from .test_kb_commands import output_of, project


def test_schema_check_names_each_stale_file_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_dir = tmp_path / "schemas"
    assert main(["schema", "--out", str(out_dir)]) == 0
    written = len(list(out_dir.rglob("*.json")))
    assert output_of(capsys) == (f"wrote {written} schema files to {out_dir}\n", "")

    assert main(["schema", "--check", "--out", str(out_dir)]) == 0
    assert output_of(capsys) == (f"schemas in {out_dir} are up to date\n", "")

    (out_dir / "pipeline.schema.json").write_text("{}", encoding="utf-8")
    assert main(["schema", "--check", "--out", str(out_dir)]) == 1
    assert output_of(capsys) == (
        "",
        f"{out_dir / 'pipeline.schema.json'}: out of date\nschemas are stale: run `ragflow-config schema`\n",
    )


@pytest.mark.parametrize(
    ("shard", "problem"),
    [("5/4", "'5/4': I must be between 1 and N"), ("x/4", "'x/4': expected I/N, like 2/4")],
)
def test_a_bad_shard_is_a_usage_error_saying_what_is_wrong(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], shard: str, problem: str
) -> None:
    pipeline = project(tmp_path)
    with pytest.raises(SystemExit) as exit:
        main(["run", str(pipeline), "--shard", shard])
    assert exit.value.code == 2
    assert output_of(capsys)[1].endswith(f"error: argument --shard: {problem}\n")


def test_json_output_keeps_non_ascii_text_as_it_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path)
    (tmp_path / "docs" / "red" / "café.md").write_text("Café au lait.\n", encoding="utf-8")
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    output_of(capsys)
    assert main(["list", str(pipeline), "notes", "--json"]) == 0
    out = output_of(capsys)[0]
    assert '"source": "café.md"' in out
    assert "café.md" in {document["source"] for document in json.loads(out)["documents"]}


def test_the_run_summary_counts_each_kind_of_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path)
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    (tmp_path / "docs" / "red" / "red0.md").write_text("Pears now.\n", encoding="utf-8")
    (tmp_path / "docs" / "blue" / "blue0.md").unlink()
    (tmp_path / "docs" / "blue" / "blank.md").write_text("\n", encoding="utf-8")
    output_of(capsys)
    assert main(["run", str(pipeline), "--workers", "0", "--prune"]) == 0
    out, err = output_of(capsys)
    assert out.startswith(
        "notes: did add 0, update 1, delete 1; unchanged 4, kept 0, unsupported 0, "
        "empty 1, failed 0; 1 chunk written\n"
    )
    # Off a terminal, one line per file that changed, in the order they were decided.
    assert sorted(err.splitlines()) == [
        "notes: delete blue0.md (source file is gone)",
        "notes: empty blank.md (nothing to index in the file)",
        "notes: update red0.md (content changed)",
    ]


def test_a_file_skipped_for_its_size_is_reported_with_its_document_id(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path)
    pipeline.write_text(pipeline.read_text() + "    max_file_bytes: 1000\n", encoding="utf-8")
    (tmp_path / "docs" / "red" / "large.md").write_text("x" * 1100, encoding="utf-8")
    assert main(["run", str(pipeline), "--workers", "0", "--json"]) == 0
    [kb] = json.loads(output_of(capsys)[0])["knowledge_bases"]
    ids = {change["path"]: change["document_id"] for change in kb["changes"]}
    skipped = [c for c in kb["changes"] if c["action"] == "unsupported"]
    assert [c["path"] for c in skipped] == ["large.md"]
    # An id like every other file's, so a report reader can match it to the store.
    assert isinstance(ids["large.md"], str) and len(set(ids.values())) == len(ids) == 7


def test_search_prints_each_hit_indented_and_says_when_none_pass_the_threshold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path)
    (tmp_path / "docs" / "red" / "orchard.md").write_text(
        "Orchards grow pears.\nOrchards grow plums.\n", encoding="utf-8"
    )
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    output_of(capsys)
    query = ["search", str(pipeline), "notes", "Orchards", "grow", "pears"]
    assert main([*query, "--top-k", "1"]) == 0
    assert output_of(capsys)[0].endswith(
        "orchard.md  (chunk 0)\n    Orchards grow pears.\n    Orchards grow plums.\n\n"
    )
    assert main([*query, "--score-threshold", "1.01"]) == 0  # above any cosine similarity
    assert output_of(capsys)[0] == "no results\n"


def test_an_unknown_executor_is_an_error_naming_the_registered_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path)
    assert main(["run", str(pipeline), "--executor", "nope"]) == 2
    assert output_of(capsys) == (
        "",
        "error: unknown executor type 'nope' (registered: local, ray)\n",
    )


def test_on_a_terminal_run_shows_each_knowledge_base_s_files_of_its_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = project(tmp_path)
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    monkeypatch.setenv("COLUMNS", "200")  # the whole line, not an ellipsis
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", terminal.getvalue())
    assert re.search(r"notes .* 6/6 files, 6 chunks, 0 failed", shown), shown
