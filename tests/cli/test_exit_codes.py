"""The exit-code contract of `docs/cli.md`, command by command and outcome by outcome.

One table (``CASES``): each command against each outcome of the contract that
applies to it: success 0; a finding 1 where the command has findings; a
configuration error 2 (an invalid or missing pipeline file, an unknown
knowledge base); a usage error 2 (argparse's, and those a command refuses
itself); Ctrl-C 130; SIGTERM during `run` 143. Then the `on_error: skip` scenario of issue 34: three
files that do not parse among good ones, on which `run`, `plan` and `verify`
agree.
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from ragflow_config.cli import main
from ragflow_config.cli._output import (
    EXIT_CODES,
    EXIT_FINDINGS,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_TERMINATED,
    EXIT_USAGE,
)
from ragflow_config.pipeline import Pipeline, _schema, _validate
from ragflow_config.sources import document_id

CORPUS = {
    "cats.md": "Cats sleep twelve to sixteen hours a day and purr when content.",
    "dogs.md": "Dogs bark at strangers and love long walks in the park.",
    "tea.md": "Green tea is brewed with water below boiling for two minutes.",
    "bread.md": "Bread rises when yeast eats the sugar in the dough.",
    "rain.md": "Rain falls when the drops in a cloud grow too heavy to float.",
}
QUERIES = """\
queries:
  - {id: q1, query: how many hours do cats sleep, relevant: [cats.md]}
  - {id: q2, query: dogs bark at strangers, relevant: [dogs.md]}
  - {id: q3, query: brewing green tea water, relevant: [tea.md]}
"""
PIPELINE = """\
version: 1
vector_stores:
  store: {{type: qdrant, parameters: {{path: store}}}}
  old: {{type: qdrant, parameters: {{path: store-old}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: {dimensions}}}}}
knowledge_bases:
  - name: notes
    sources: [{{path: corpus}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 64, overlap: 0}}}}
    embedding: model
    vector_store: {store}
    collection: notes
    on_error: {on_error}
    evaluation:
      queries: queries.yaml
      k: 2
      thresholds: {{recall: 0.5}}
"""


class Project:
    """A pipeline file, its corpus and its judged queries in a temporary folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.path = folder / "pipeline.yaml"
        (folder / "corpus").mkdir()
        for name, text in CORPUS.items():
            (folder / "corpus" / name).write_text(text, encoding="utf-8")
        (folder / "queries.yaml").write_text(QUERIES, encoding="utf-8")
        self.write()

    @property
    def file(self) -> str:
        return str(self.path)

    def write(self, *, dimensions: int = 256, store: str = "store", on_error: str = "skip") -> None:
        text = PIPELINE.format(dimensions=dimensions, store=store, on_error=on_error)
        self.path.write_text(text, encoding="utf-8")

    def run(self, *args: str) -> None:
        assert code(["run", self.file, "--workers", "0", *args]) == EXIT_OK

    def corrupt(self, count: int) -> list[str]:
        """``count`` text files the text parser refuses: latin-1 bytes, not UTF-8."""
        names = [f"broken{i}.txt" for i in range(count)]
        for name in names:
            (self.folder / "corpus" / name).write_bytes("caf\xe9 au lait\n".encode("latin-1"))
        return names


def code(argv: list[str]) -> int:
    """``main(argv)``'s exit code, argparse's own (a SystemExit) included."""
    try:
        return main(argv)
    except SystemExit as exit:
        assert isinstance(exit.code, int), exit.code
        return exit.code


# Every command whose first positional is a pipeline file, and what else it needs.
KB_ARGS: dict[str, list[str]] = {
    "run": ["--workers", "0"],
    "plan": [],
    "verify": [],
    "eval": [],
    "search": ["notes", "cats"],
    "list": ["notes"],
    "delete": ["notes", "some-id"],
    "reset": ["notes", "--yes"],
    "rollback": ["notes"],
    "copy": ["notes", "--from", "old"],
}
FILE_COMMANDS = ["validate", *KB_ARGS]
EVERY_COMMAND = [*FILE_COMMANDS, "schema"]


def argv(command: str, file: str, kb: str = "notes") -> list[str]:
    """``command`` on ``file``, naming knowledge base ``kb`` where it takes one."""
    extra = [kb if arg == "notes" else arg for arg in KB_ARGS.get(command, [])]
    if command in ("run", "plan", "verify", "eval") and kb != "notes":
        extra += ["--kb", kb]
    return [command, file, *extra]


Setup = Callable[[Project, pytest.MonkeyPatch], list[str]]


@dataclass(frozen=True)
class Case:
    command: str
    outcome: str
    setup: Setup
    expected: int

    @property
    def id(self) -> str:
        return f"{self.command}-{self.outcome}"


# --- success -------------------------------------------------------------------------


def _indexed(command: str, *args: str) -> Setup:
    def setup(project: Project, _: pytest.MonkeyPatch) -> list[str]:
        project.run()
        return [command, project.file, *args]

    return setup


def _fresh(command: str, *args: str) -> Setup:
    return lambda project, _: [command, project.file, *args]


def _delete_one(project: Project, _: pytest.MonkeyPatch) -> list[str]:
    project.run()
    return ["delete", project.file, "notes", document_id("notes", "corpus", "cats.md")]


def _rolled_back(project: Project, _: pytest.MonkeyPatch) -> list[str]:
    project.run()
    project.write(dimensions=128)  # another model: rebuilt beside, switched to
    project.run()
    return ["rollback", project.file, "notes"]


def _copied(project: Project, _: pytest.MonkeyPatch) -> list[str]:
    project.write(store="old")
    project.run()
    project.write(store="store")  # the knowledge base moved: its records are in `old`
    return ["copy", project.file, "notes", "--from", "old"]


def _fresh_schemas(project: Project, _: pytest.MonkeyPatch) -> list[str]:
    out = str(project.folder / "schemas")
    assert code(["schema", "--out", out]) == EXIT_OK
    return ["schema", "--check", "--out", out]


SUCCESS = [
    Case("run", "success", _fresh("run", "--workers", "0"), EXIT_OK),
    Case("plan", "success-pending", _fresh("plan"), EXIT_OK),
    Case("plan", "success-in-sync-check", _indexed("plan", "--check"), EXIT_OK),
    Case("verify", "success", _indexed("verify"), EXIT_OK),
    Case("eval", "success", _indexed("eval"), EXIT_OK),
    Case("validate", "success", _fresh("validate"), EXIT_OK),
    Case("search", "success", _indexed("search", "notes", "cats"), EXIT_OK),
    Case("list", "success", _indexed("list", "notes"), EXIT_OK),
    Case("delete", "success", _delete_one, EXIT_OK),
    Case("reset", "success", _indexed("reset", "notes", "--yes"), EXIT_OK),
    Case("rollback", "success", _rolled_back, EXIT_OK),
    Case("copy", "success", _copied, EXIT_OK),
    Case("schema", "success", _fresh_schemas, EXIT_OK),
]

# --- findings --------------------------------------------------------------------------


def _failing_file(command: str, *args: str) -> Setup:
    def setup(project: Project, _: pytest.MonkeyPatch) -> list[str]:
        project.write(on_error="fail")
        project.corrupt(1)
        return [command, project.file, *args]

    return setup


def _missed_threshold(project: Project, _: pytest.MonkeyPatch) -> list[str]:
    project.run()
    unanswerable = "".join(
        f"  - {{id: q{i}, query: zebra stripes savanna, relevant: [nowhere.md]}}\n"
        for i in range(4, 8)
    )
    (project.folder / "queries.yaml").write_text(QUERIES + unanswerable, encoding="utf-8")
    return ["eval", project.file]


def _stale_schemas(project: Project, _: pytest.MonkeyPatch) -> list[str]:
    return ["schema", "--check", "--out", str(project.folder / "no-schemas")]


FINDINGS = [
    Case("run", "finding-failed-file", _failing_file("run", "--workers", "0"), EXIT_FINDINGS),
    Case("plan", "finding-failed-file", _failing_file("plan"), EXIT_FINDINGS),
    Case("plan", "finding-pending-check", _fresh("plan", "--check"), EXIT_FINDINGS),
    Case("verify", "finding-drift", _fresh("verify"), EXIT_FINDINGS),  # all missing
    Case("verify", "finding-failed-file", _failing_file("verify"), EXIT_FINDINGS),
    Case("eval", "finding-missed-threshold", _missed_threshold, EXIT_FINDINGS),
    Case("search", "finding-never-built", _fresh("search", "notes", "cats"), EXIT_FINDINGS),
    Case("delete", "finding-no-such-document", _indexed("delete", "notes", "x"), EXIT_FINDINGS),
    Case("rollback", "finding-nothing-to-roll-back", _indexed("rollback", "notes"), EXIT_FINDINGS),
    Case("copy", "finding-source-empty", _fresh("copy", "notes", "--from", "old"), EXIT_FINDINGS),
    Case("schema", "finding-stale", _stale_schemas, EXIT_FINDINGS),
]

# --- configuration errors ----------------------------------------------------------------


def _invalid_yaml(command: str) -> Setup:
    def setup(project: Project, _: pytest.MonkeyPatch) -> list[str]:
        project.path.write_text("version: 1\nknowledge_bases: [\n", encoding="utf-8")
        return argv(command, project.file)

    return setup


def _invalid_value(command: str) -> Setup:
    def setup(project: Project, _: pytest.MonkeyPatch) -> list[str]:
        text = project.path.read_text(encoding="utf-8").replace("chunk_size: 64", "chunk_size: 0")
        project.path.write_text(text, encoding="utf-8")
        return argv(command, project.file)

    return setup


def _missing_file(command: str) -> Setup:
    return lambda project, _: argv(command, str(project.folder / "nowhere.yaml"))


def _unknown_kb(command: str) -> Setup:
    return lambda project, _: argv(command, project.file, kb="nowhere")


CONFIG_ERRORS = [
    *(Case(c, "config-invalid-yaml", _invalid_yaml(c), EXIT_USAGE) for c in FILE_COMMANDS),
    *(Case(c, "config-invalid-value", _invalid_value(c), EXIT_USAGE) for c in FILE_COMMANDS),
    *(Case(c, "config-missing-file", _missing_file(c), EXIT_USAGE) for c in FILE_COMMANDS),
    *(Case(c, "config-unknown-kb", _unknown_kb(c), EXIT_USAGE) for c in KB_ARGS),
    Case("copy", "config-unknown-store", _fresh("copy", "notes", "--from", "x"), EXIT_USAGE),
    Case("copy", "config-own-store", _fresh("copy", "notes", "--from", "store"), EXIT_USAGE),
]

# --- usage errors ------------------------------------------------------------------------


def _bad_flag(command: str) -> Setup:
    return lambda project, _: [*argv(command, project.file), "--no-such-flag"]


def _three_files(project: Project, _: pytest.MonkeyPatch) -> list[str]:
    return ["eval", project.file, project.file, project.file]


USAGE_ERRORS = [
    *(Case(c, "usage-unknown-flag", _bad_flag(c), EXIT_USAGE) for c in FILE_COMMANDS),
    Case("schema", "usage-unknown-flag", lambda p, _: ["schema", "--no-such-flag"], EXIT_USAGE),
    Case("run", "usage-bad-value", _fresh("run", "--workers", "-1"), EXIT_USAGE),
    Case(
        "search", "usage-bad-filter", _indexed("search", "notes", "x", "--filter", "k"), EXIT_USAGE
    ),
    Case("eval", "usage-three-files", _three_files, EXIT_USAGE),
    # Off a terminal (as under pytest) reset deletes only with --yes.
    Case("reset", "usage-no-yes", _indexed("reset", "notes"), EXIT_USAGE),
]

# --- interrupted -------------------------------------------------------------------------


def _ctrl_c(*_: object, **__: object) -> Any:
    raise KeyboardInterrupt


def _interrupted(command: str) -> Setup:
    """Ctrl-C while the command works: where it opens the stores, or checks a file."""

    def setup(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
        if command == "copy":
            _copied(project, monkeypatch)
        elif command != "run":
            project.run()
        monkeypatch.setattr(Pipeline, "build", _ctrl_c)
        # Where the commands import them from when they run (not at start-up).
        monkeypatch.setattr(_validate, "check_file", _ctrl_c)
        monkeypatch.setattr(_schema, "stale_schemas", _ctrl_c)
        return argv(command, project.file) if command != "schema" else ["schema", "--check"]

    return setup


INTERRUPTED = [Case(c, "interrupted", _interrupted(c), EXIT_INTERRUPTED) for c in EVERY_COMMAND]


async def _sigterm_while_running(*_: object, **__: object) -> Any:
    signal.raise_signal(signal.SIGTERM)
    await asyncio.sleep(60)  # cancelled by the signal long before


def _terminated(project: Project, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """SIGTERM while `run` works: it stops as on Ctrl-C (tests/pipeline/test_stopped_run.py
    sends it to a real run); other commands keep SIGTERM's own action."""
    monkeypatch.setattr(Pipeline, "run", _sigterm_while_running)
    return argv("run", project.file)


CASES = [
    *SUCCESS,
    *FINDINGS,
    *CONFIG_ERRORS,
    *USAGE_ERRORS,
    *INTERRUPTED,
    Case("run", "terminated", _terminated, EXIT_TERMINATED),
]


@pytest.fixture
def project(tmp_path: Path) -> Iterator[Project]:
    yield Project(tmp_path)


@pytest.fixture(autouse=True)
def _ctrl_c_as_on_a_terminal() -> Iterator[None]:
    # An ignored SIGINT (nohup, a CI runner) must not change what KeyboardInterrupt does.
    handler = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, handler)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_each_command_exits_as_the_contract_says(
    case: Case,
    project: Project,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    args = case.setup(project, monkeypatch)
    capsys.readouterr()
    assert code(args) == case.expected, capsys.readouterr()
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err


def test_the_table_covers_every_command_and_every_code_of_the_contract() -> None:
    assert {case.expected for case in CASES} == {code for code, _, _ in EXIT_CODES}
    assert {case.command for case in CASES} == set(EVERY_COMMAND)
    for command in EVERY_COMMAND:  # success, a usage error and Ctrl-C, everywhere
        outcomes = {case.expected for case in CASES if case.command == command}
        assert {EXIT_OK, EXIT_USAGE, EXIT_INTERRUPTED} <= outcomes, command
    for command in ("run", "plan", "verify", "eval", "schema"):  # the commands of findings
        assert EXIT_FINDINGS in {case.expected for case in CASES if case.command == command}


def test_the_reference_shows_the_contract_as_one_table() -> None:
    reference = (Path(__file__).resolve().parents[2] / "docs" / "cli.md").read_text("utf-8")
    assert reference.count("| code | meaning | when |") == 1
    for exit_code, meaning, _ in EXIT_CODES:
        assert f"\n| {exit_code} | {meaning} | " in reference


# --- on_error: skip: run, plan and verify agree ---------------------------------------------


def _both(capsys: pytest.CaptureFixture[str]) -> str:
    captured = capsys.readouterr()
    return captured.out + captured.err


def test_with_on_error_skip_run_plan_and_verify_agree_on_files_that_do_not_parse(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = project.corrupt(3)
    reason = "not valid utf-8 at byte 3"
    run = ["run", project.file, "--workers", "0"]

    for _ in range(2):  # named by the first run; then remembered, and counted (issue 52)
        assert code(run) == EXIT_OK
        output = _both(capsys)
        for name in broken:
            assert (f"notes: skipped {name}: {reason}" in output) == (_ == 0), output
        assert f"unchanged {0 if _ == 0 else len(CORPUS)}" in output
        assert "failed 3 (3 skipped, on_error: skip)" in output
    assert "notes: 3 files yielded nothing when last tried" in output

    assert code(["plan", project.file]) == EXIT_OK
    output = _both(capsys)
    assert not any(name in output for name in broken), output
    assert "failed 3 (3 skipped, on_error: skip)" in output
    assert code(["plan", project.file, "--retry-failed"]) == EXIT_OK  # parsed: named again
    output = _both(capsys)
    for name in broken:
        assert f"  skipped     {name}  ({reason}" in output

    assert code(["verify", project.file]) == EXIT_OK
    output = _both(capsys)
    assert not any(name in output for name in broken), output
    assert (
        f"notes: {len(CORPUS)} documents in sync, 0 drifted, 3 skipped (on_error: skip) "
        "(3 remembered, not parsed again)" in output
    )

    assert code(["verify", project.file, "--json"]) == EXIT_OK
    report = json.loads(capsys.readouterr().out)
    assert report["healthy"] is True and report["drift"] == []
    assert sorted(row["path"] for row in report["skipped"]) == broken
    assert {row["status"] for row in report["skipped"]} == {"skipped"}

    # --strict: the same report, and a finding for all three.
    for command in (run, ["plan", project.file], ["verify", project.file]):
        assert code([*command, "--strict"]) == EXIT_FINDINGS, command
        output = _both(capsys)
        assert all(name in output for name in broken), output
    assert code(["verify", project.file, "--json", "--strict"]) == EXIT_FINDINGS
    assert json.loads(capsys.readouterr().out)["healthy"] is False


def test_run_plan_and_verify_agree_on_an_edit_that_does_not_parse(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 52, trap 9: the run keeps the old version and skips the edit; the plan and
    # verify, which parse the edited file as the run does, say the same, not "update"
    # or "drift".
    project.run()
    capsys.readouterr()
    (project.folder / "corpus" / "cats.md").write_bytes("caf\xe9 au lait\n".encode("latin-1"))
    reason = "not valid utf-8 at byte 3"
    assert code(["plan", project.file]) == EXIT_OK
    plan = _both(capsys)
    assert f"  skipped     cats.md  ({reason}" in plan and "  update " not in plan
    assert "would write 0 chunks" in plan
    assert code(["verify", project.file]) == EXIT_OK
    assert f"notes: skipped    cats.md  ({reason}" in _both(capsys)
    assert code(["run", project.file, "--workers", "0"]) == EXIT_OK
    assert f"notes: skipped cats.md: {reason}" in _both(capsys)
    for command in (["run", project.file, "--workers", "0"], ["plan", project.file]):
        assert code([*command, "--strict"]) == EXIT_FINDINGS, command
    assert code(["verify", project.file, "--strict"]) == EXIT_FINDINGS
    capsys.readouterr()
    assert code(["search", project.file, "notes", "cats sleep"]) == EXIT_OK
    assert "Cats sleep twelve" in capsys.readouterr().out  # the old version stays


def test_with_on_error_fail_a_file_that_does_not_parse_fails_run_plan_and_verify(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.write(on_error="fail")
    [broken] = project.corrupt(1)
    assert code(["run", project.file, "--workers", "0"]) == EXIT_FINDINGS
    output = _both(capsys)
    assert f"notes: FAILED {broken}: not valid utf-8" in output
    assert "notes: stopped at the first failure (on_error: fail)" in output
    for command in ("plan", "verify"):
        assert code([command, project.file]) == EXIT_FINDINGS, command
        assert "stopped at the first failure (on_error: fail)" in _both(capsys)


def test_a_file_that_cannot_be_read_is_a_finding_even_under_on_error_skip(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.run()
    (project.folder / "corpus" / "api.md").symlink_to("generated/api.md")  # not there
    assert code(["run", project.file, "--workers", "0"]) == EXIT_FINDINGS
    assert "notes: FAILED api.md: cannot read the file" in _both(capsys)
    assert code(["plan", project.file]) == EXIT_FINDINGS
    assert code(["verify", project.file]) == EXIT_FINDINGS


def test_a_rebuild_switches_when_its_failed_files_failed_in_the_live_collection_too(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 52: the same files failed in the live collection, so switching loses nothing.
    # The plan says "then switch" and nothing else, on stdout; both exit 0 (skipped files).
    project.run()
    project.corrupt(2)
    assert code(["run", project.file, "--workers", "0"]) == EXIT_OK
    project.write(dimensions=128)
    capsys.readouterr()
    assert code(["plan", project.file]) == EXIT_OK
    plan = capsys.readouterr()
    assert "to embed into notes__" in plan.out and plan.out.count("then switch") == 1
    assert "switch" not in plan.err
    assert code(["run", project.file, "--workers", "0"]) == EXIT_OK
    assert "switched to notes__" in capsys.readouterr().out
    assert code(["run", project.file, "--workers", "0", "--strict"]) == EXIT_FINDINGS


def test_a_rebuild_that_would_drop_a_file_the_live_collection_holds_is_not_switched_to(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    project.run()
    (project.folder / "corpus" / "cats.md").write_bytes("caf\xe9\n".encode("latin-1"))
    project.write(dimensions=128)
    capsys.readouterr()
    assert code(["plan", project.file]) == EXIT_FINDINGS  # as the run will
    plan = capsys.readouterr()
    assert "to embed into notes__" in plan.out and "but not switch to it: 1 of 5" in plan.out
    assert "switch" not in plan.err
    assert code(["run", project.file, "--workers", "0"]) == EXIT_FINDINGS
    refusal = capsys.readouterr().err
    assert "not switched to: 1 of 5 file(s) failed" in refusal, refusal
    assert "the live collection holds (cats.md)" in refusal
    assert "raise max_failed_fraction (now 0%) to 20.0%" in refusal
    project.write()  # `list` through the live collection's model
    assert code(["list", project.file, "notes"]) == EXIT_OK
    assert "(not switched: 1 file failed)" in capsys.readouterr().out
    # Within max_failed_fraction the rebuild goes live without the file: exit 0.
    project.write(dimensions=128)
    text = project.path.read_text(encoding="utf-8")
    project.path.write_text(
        text.replace("on_error: skip", "on_error: skip\n    max_failed_fraction: 0.2"),
        encoding="utf-8",
    )
    assert code(["run", project.file, "--workers", "0"]) == EXIT_OK
    assert "switched to notes__" in capsys.readouterr().out
    assert code(["list", project.file, "notes"]) == EXIT_OK
    listed = capsys.readouterr().out
    assert "not switched" not in listed and "cats.md" not in listed and "dogs.md" in listed


def test_a_search_of_a_knowledge_base_never_built_says_so(
    project: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 52: not "no results" and exit 0, which reads as a search that found nothing.
    assert code(["search", project.file, "notes", "cats"]) == EXIT_FINDINGS
    assert "knowledge base 'notes' was never built: its store has no collection 'notes'; " in (
        capsys.readouterr().err
    )


def test_the_contract_names_each_code_once() -> None:
    codes = [exit_code for exit_code, _, _ in EXIT_CODES]
    assert codes == [EXIT_OK, EXIT_FINDINGS, EXIT_USAGE, EXIT_INTERRUPTED, EXIT_TERMINATED]
