"""The command table of docs/commands.md, held to its word: exit codes, and flags that matter.

Each test here was seen to fail on a single mutant of the command line or the
runner that breaks the promise it checks (issue 27).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from pipeline.test_promises import edit
from pipeline.test_run import BROKEN, GOOD, make_project

from ragflow_config.cli import main

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class Cli:
    """``ragflow-config`` called as a user would, on one pipeline file."""

    def __init__(self, pipeline: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.pipeline = str(pipeline)
        self.capsys = capsys
        self.out = self.err = ""

    def __call__(self, command: str, *args: str) -> int:
        self.capsys.readouterr()
        extra = ("--workers", "0") if command == "run" else ()
        code = main([command, self.pipeline, *args, *extra])
        self.out, self.err = self.capsys.readouterr()
        return code

    def documents(self, kb: str = "docs") -> dict[str, int]:
        """Chunk count by source, as `list --json` shows them."""
        assert self("list", kb, "--json") == EXIT_OK
        return {d["source"]: d["chunk_count"] for d in json.loads(self.out)["documents"]}


@pytest.fixture
def cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Cli:
    """The runner tests' project: three text files and one no parser takes; `prune` unset."""
    return Cli(make_project(tmp_path, broken=False), capsys)


def set_option(cli: Cli, line: str) -> None:
    """Add an option to the knowledge base, the last block of the file."""
    with open(cli.pipeline, "a", encoding="utf-8") as file:
        file.write(f"    {line}\n")


def test_plan_exits_0_when_it_could_plan_1_with_check_while_changes_are_pending_2_on_error(
    cli: Cli, tmp_path: Path
) -> None:
    assert cli("plan") == EXIT_OK  # pending changes are what a plan shows, not a failure
    for path in GOOD:
        assert f"  add         {path}  (new file)" in cli.out
    assert cli("plan", "--check") == EXIT_FINDINGS
    for path in GOOD:
        assert f"  add         {path}  (new file)" in cli.out
    assert cli.documents() == {}  # a plan writes nothing

    assert cli("run") == EXIT_OK
    assert cli("plan", "--check") == EXIT_OK
    assert "docs: would add 0, update 0, delete 0; unchanged 3" in cli.out

    (tmp_path / "docs" / "fox.md").write_text("# Foxes\n\nFoxes are red.\n", encoding="utf-8")
    assert cli("plan", "--json", "--check") == EXIT_FINDINGS
    [kb] = json.loads(cli.out)["knowledge_bases"]
    assert kb["counts"]["update"] == 1

    edit(Path(cli.pipeline), "chunk_size: 32", "chunk_size: 0")
    assert cli("plan") == EXIT_USAGE  # an invalid file, with or without --check
    assert "chunk_size" in cli.err
    assert cli("plan", "--check") == EXIT_USAGE
    assert "chunk_size" in cli.err


def test_verify_names_missing_extra_and_drifted_documents_and_fix_repairs_them(
    cli: Cli, tmp_path: Path
) -> None:
    set_option(cli, "max_delete_fraction: 0.5")
    assert cli("run") == EXIT_OK
    assert cli("verify") == EXIT_OK
    assert "docs: 3 documents in sync, 0 drifted" in cli.out

    docs = tmp_path / "docs"
    (docs / "guide" / "sorting.txt").unlink()
    (docs / "new.md").write_text("A new page.\n", encoding="utf-8")
    (docs / "fox.md").write_text("# Foxes\n\nFoxes are red.\n", encoding="utf-8")
    assert cli("verify") == EXIT_FINDINGS
    assert cli.out.splitlines() == [
        "docs: drift      fox.md  (content changed)",
        "docs: extra      guide/sorting.txt  (source file is gone)",
        "docs: missing    new.md  (new file)",
        "docs: 1 documents in sync, 3 drifted",
    ]
    assert cli("verify", "--json") == EXIT_FINDINGS
    report = json.loads(cli.out)
    assert report["healthy"] is False
    assert {(row["status"], row["path"]) for row in report["drift"]} == {
        ("drift", "fox.md"),
        ("extra", "guide/sorting.txt"),
        ("missing", "new.md"),
    }

    # --fix deletes the extra document although the pipeline leaves `prune` off.
    assert cli("verify", "--fix") == EXIT_OK
    assert sorted(cli.documents()) == ["fox.md", "guide/deep/files.rst", "new.md"]
    assert cli("verify") == EXIT_OK


def test_prune_and_no_prune_override_the_pipeline(cli: Cli, tmp_path: Path) -> None:
    set_option(cli, "max_delete_fraction: 0.5")
    assert cli("run") == EXIT_OK
    (tmp_path / "docs" / "guide" / "sorting.txt").unlink()

    assert cli("run") == EXIT_OK  # the pipeline leaves `prune` off: the document stays
    assert "kept 1" in cli.out and "guide/sorting.txt" in cli.documents()
    assert cli("plan", "--prune", "--check") == EXIT_FINDINGS
    assert "  delete      guide/sorting.txt  (source file is gone)" in cli.out
    assert cli("run", "--prune") == EXIT_OK
    assert sorted(cli.documents()) == ["fox.md", "guide/deep/files.rst"]

    set_option(cli, "prune: true")
    (tmp_path / "docs" / "fox.md").unlink()
    assert cli("plan", "--no-prune") == EXIT_OK  # nothing a run would do
    assert cli("run", "--no-prune") == EXIT_OK
    assert "fox.md" in cli.documents()
    assert cli("run") == EXIT_OK
    assert sorted(cli.documents()) == ["guide/deep/files.rst"]


def test_the_mass_deletion_guard_stops_plan_and_run_until_forced(cli: Cli, tmp_path: Path) -> None:
    set_option(cli, "prune: true")  # max_delete_fraction: 0.2 by default
    assert cli("run") == EXIT_OK
    (tmp_path / "docs" / "fox.md").unlink()
    (tmp_path / "docs" / "guide" / "sorting.txt").unlink()

    refusal = "docs: the run would delete 2 of 3 documents (67%, more than max_delete_fraction 20%)"
    assert cli("plan") == EXIT_FINDINGS
    assert refusal in cli.err
    assert "`ragflow-config plan --force` lists what would be deleted" in cli.err
    assert cli("run") == EXIT_FINDINGS
    assert refusal in cli.err
    assert len(cli.documents()) == 3  # refused before writing anything

    assert cli("plan", "--force", "--check") == EXIT_FINDINGS
    assert cli("run", "--force") == EXIT_OK
    assert sorted(cli.documents()) == ["guide/deep/files.rst"]


def test_refuse_on_fingerprint_change_stops_naming_what_changed(cli: Cli) -> None:
    assert cli("run") == EXIT_OK
    edit(Path(cli.pipeline), "chunk_size: 32", "chunk_size: 16")

    for command in ("plan", "run"):
        assert cli(command, "--refuse-on-fingerprint-change") == EXIT_FINDINGS
        assert "the pipeline changed what produces the vectors (chunker)" in cli.err
    assert cli("plan", "--check") == EXIT_FINDINGS  # the refused run re-indexed nothing
    assert cli.out.count("(pipeline changed: chunker)") == 3

    assert cli("run") == EXIT_OK
    assert "docs: pipeline fingerprint changed: chunker" in cli.out
    assert cli("plan", "--refuse-on-fingerprint-change") == EXIT_OK


def test_kb_limits_run_plan_and_verify_to_the_named_knowledge_base(
    cli: Cli, tmp_path: Path
) -> None:
    with open(cli.pipeline, "a", encoding="utf-8") as file:
        file.write(
            "  - {name: notes, sources: [{path: notes}], embedding: hashing,"
            " vector_store: disk, collection: notes}\n"
        )
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "todo.md").write_text("Water the plants.\n", encoding="utf-8")

    assert cli("plan", "--kb", "notes", "--check") == EXIT_FINDINGS
    assert cli("run", "--kb", "notes") == EXIT_OK
    assert cli.documents("notes") == {"todo.md": 1}
    assert cli.documents("docs") == {}
    assert cli("plan", "--kb", "notes") == EXIT_OK
    assert cli("verify", "--kb", "notes") == EXIT_OK
    assert cli("plan", "--check") == EXIT_FINDINGS  # docs is still to index
    assert cli("verify") == EXIT_FINDINGS


def test_list_shows_each_document_and_delete_removes_one(cli: Cli) -> None:
    assert cli("run") == EXIT_OK
    assert cli("list", "docs", "--json") == EXIT_OK
    listed = json.loads(cli.out)["documents"]
    assert sorted(d["source"] for d in listed) == sorted(GOOD)

    assert cli("list", "docs") == EXIT_OK
    lines = cli.out.splitlines()
    assert lines[-1] == "3 documents"
    for line, document in zip(lines, sorted(listed, key=lambda d: d["source"]), strict=False):
        assert line.split() == [document["document_id"], "1", "chunk", document["source"]]

    [fox] = [d["document_id"] for d in listed if d["source"] == "fox.md"]
    assert cli("delete", "docs", fox) == EXIT_OK
    assert cli.out == f"deleted {fox} from docs\n"
    assert sorted(cli.documents()) == ["guide/deep/files.rst", "guide/sorting.txt"]
    assert cli("delete", "docs", fox) == EXIT_FINDINGS
    assert f"nothing deleted: docs has no document {fox}" in cli.err
    assert cli("plan", "--check") == EXIT_FINDINGS
    assert "  add         fox.md  (new file)" in cli.out


def test_verify_reports_a_mass_deletion_as_drift_and_fixes_it_only_when_forced(
    cli: Cli, tmp_path: Path
) -> None:
    set_option(cli, "prune: true")  # max_delete_fraction: 0.2 by default
    assert cli("run") == EXIT_OK
    (tmp_path / "docs" / "fox.md").unlink()
    (tmp_path / "docs" / "guide" / "sorting.txt").unlink()

    # Reporting never refuses: the guard is for deleting, and verify deletes nothing.
    assert cli("verify") == EXIT_FINDINGS
    assert cli.out.splitlines() == [
        "docs: extra      fox.md  (source file is gone)",
        "docs: extra      guide/sorting.txt  (source file is gone)",
        "docs: 1 documents in sync, 2 drifted",
    ]
    assert cli.err == ""
    assert cli("verify", "--json") == EXIT_FINDINGS
    assert {
        (row["knowledge_base"], row["status"], row["path"]) for row in json.loads(cli.out)["drift"]
    } == {
        ("docs", "extra", "fox.md"),
        ("docs", "extra", "guide/sorting.txt"),
    }

    assert cli("verify", "--fix") == EXIT_FINDINGS
    assert "the run would delete 2 of 3 documents" in cli.err
    assert len(cli.documents()) == 3
    assert cli("verify", "--fix", "--force", "--json") == EXIT_OK
    [kb] = json.loads(cli.out)["knowledge_bases"]
    assert kb["counts"]["delete"] == 2
    assert sorted(cli.documents()) == ["guide/deep/files.rst"]
    assert cli("verify") == EXIT_OK


def test_run_ends_with_the_file_count_and_on_error_fail_says_where_it_stopped(
    cli: Cli, tmp_path: Path
) -> None:
    assert cli("run") == EXIT_OK
    # The three texts and the file no parser takes.
    assert re.fullmatch(r"4 files in \d+\.\ds", cli.out.splitlines()[-1]), cli.out
    # With --json the JSON document is all it writes: no per-file lines on stderr.
    (tmp_path / "docs" / "fox.md").write_text("# Foxes\n\nFoxes are red.\n", encoding="utf-8")
    assert cli("run", "--json") == EXIT_OK
    assert cli.err == ""
    [kb] = json.loads(cli.out)["knowledge_bases"]
    assert kb["counts"]["update"] == 1

    (tmp_path / "docs" / BROKEN).write_bytes("caf\xe9\n".encode("latin-1"))
    edit(Path(cli.pipeline), "on_error: skip", "on_error: fail")
    assert cli("verify", "--fix") == EXIT_FINDINGS  # a repair that fails says so
    assert cli("run") == EXIT_FINDINGS
    assert "failed 1" in cli.out
    assert re.fullmatch(r"\d files? in \d+\.\ds", cli.out.splitlines()[-1]), cli.out
    failed, stopped = cli.err.splitlines()[-2:]
    assert failed.startswith(f"docs: FAILED {BROKEN}: not valid utf-8 at byte 3")
    reason = failed.removeprefix(f"docs: FAILED {BROKEN}: ")
    assert stopped == f"docs: stopped at the first failure (on_error: fail): {BROKEN}: {reason}"
