"""`reset` and `delete` as a user meets them: the question asked, the answers taken, the scope named.

Written for the survivors of the mutation run over `cli/` (issue 27, item 4):
each test failed on the mutants `bench/mutation.md` lists beside it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from pipeline.test_tenants import listing, tenant

from ragflow_config.cli import main

from ._terminal import Terminal
from .test_kb_commands import output_of, project


def reset_answering(pipeline: Path, kb: str, answer: str, monkeypatch: pytest.MonkeyPatch) -> int:
    monkeypatch.setattr("sys.stdin", Terminal(answer + "\n"))
    return main(["reset", str(pipeline), kb])


def documents(pipeline: Path, kb: str, capsys: pytest.CaptureFixture[str]) -> int:
    output_of(capsys)
    assert main(["list", str(pipeline), kb, "--json"]) == 0
    return int(json.loads(output_of(capsys)[0])["total"])


def test_reset_on_a_terminal_deletes_only_on_y_or_yes_in_any_case(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = project(tmp_path)
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    output_of(capsys)

    for answer in ("", "n", "no", "yess"):
        assert reset_answering(pipeline, "notes", answer, monkeypatch) == 1
        out = output_of(capsys)[0]
        assert out == "Delete every document of notes (collection 'notes')? [y/N] nothing deleted\n"
        assert documents(pipeline, "notes", capsys) == 6

    for answer in ("y", " YES "):
        assert reset_answering(pipeline, "notes", answer, monkeypatch) == 0
        assert output_of(capsys)[0].endswith("? [y/N] reset notes: collection dropped\n")
        assert documents(pipeline, "notes", capsys) == 0
        assert main(["run", str(pipeline), "--workers", "0"]) == 0


def test_reset_of_one_tenant_names_its_scope_and_leaves_the_other_tenant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    a = tenant(tmp_path, "a", {"policy.md": "Tenant a's policy."})
    b = tenant(tmp_path, "b", {"policy.md": "Tenant b's policy."})
    for pipeline in (a, b):
        assert main(["run", str(pipeline), "--workers", "0"]) == 0
    output_of(capsys)

    monkeypatch.setattr("sys.stdin", io.StringIO(""))  # no terminal: --yes is required
    assert main(["reset", str(a), "handbook"]) == 2  # usage
    assert output_of(capsys)[1] == (
        "error: reset deletes every document of handbook (collection 'handbooks' within "
        '{"tenant_id": "a"}); pass --yes to confirm\n'
    )

    assert main(["reset", str(a), "handbook", "--yes"]) == 0
    assert output_of(capsys)[0] == "reset handbook: documents deleted; other scopes' remain\n"
    assert listing(a, capsys) == {}
    assert list(listing(b, capsys)) == ["policy.md"]


def test_reset_of_an_unknown_knowledge_base_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path)
    assert main(["reset", str(pipeline), "nowhere", "--yes"]) == 2
    assert output_of(capsys)[1] == f"error: {pipeline}: no knowledge base named 'nowhere'\n"


def test_deleting_an_unknown_document_deletes_nothing_and_says_whether_a_scope_hid_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = project(tmp_path)
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    output_of(capsys)
    assert main(["delete", str(pipeline), "notes", "no-such-id"]) == 1
    assert output_of(capsys)[1] == "error: nothing deleted: notes has no document no-such-id\n"

    a = tenant(tmp_path / "tenants", "a", {"policy.md": "Tenant a's policy."})
    b = tenant(tmp_path / "tenants", "b", {"rules.md": "Tenant b's rules."})
    for scoped in (a, b):
        assert main(["run", str(scoped), "--workers", "0"]) == 0
    [b_rules] = listing(b, capsys).values()
    assert main(["delete", str(a), "handbook", b_rules]) == 1
    assert output_of(capsys)[1] == (
        f"error: nothing deleted: handbook has no document {b_rules} within its metadata_filter\n"
    )
    assert list(listing(b, capsys)) == ["rules.md"]
