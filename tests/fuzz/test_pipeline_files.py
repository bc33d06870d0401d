"""Fuzzing pipeline files: a malformed file gives `FILE:LINE:COLUMN: ...` lines, never a traceback.

The seeds are the valid files of ``pipelines/``, copied with what they
reference into a temporary folder. Each example mutates one (truncates it,
shifts, deletes or repeats lines, swaps a value for a mapping or a list,
inserts tabs, NUL bytes, ``${`` and other odd characters) and runs
``validate`` on it through ``main``; a mutant of the hashing pipeline, whose
store is Qdrant on a path in that folder, goes through ``plan`` too, which
needs no server and writes no document.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ragflow_config.cli import main

from ._profile import fuzzing

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
SEEDS = {path.name: path.read_text(encoding="utf-8") for path in sorted(PIPELINES.glob("*.yaml"))}
# The remote source kinds' blocks, which no example in pipelines/ holds (validate reaches
# no network for them, so their mutants are checked offline like the rest).
SEEDS["remote-sources.yaml"] = SEEDS["local-hashing.yaml"].replace(
    '        exclude: ["SOURCES.md"]\n',
    '        exclude: ["SOURCES.md"]\n'
    "      - type: s3\n"
    "        parameters: {url: s3://team-docs/kb, endpoint_url: http://127.0.0.1:9000}\n"
    "        include: ['*.md']\n"
    "      - type: git\n"
    "        parameters: {url: https://example.com/handbook.git, ref: v1.2}\n"
    "        exclude: [drafts/]\n"
    "      - type: web\n"
    "        parameters: {sitemap: https://docs.example.com/sitemap.xml, max_pages: 50}\n"
    "        include: ['guide/**']\n",
)
assert SEEDS["remote-sources.yaml"] != SEEDS["local-hashing.yaml"]
CASE = "case.yaml"
# An issue as `validate` and every command print it: file, line, column, then what.
ISSUE = re.compile(rf"^{re.escape(CASE)}:[1-9][0-9]*:[1-9][0-9]*: \S")

# local-hashing.yaml with its store inside the copy and a corpus of two small
# files: `plan` on it is a dry run of a few milliseconds, with no server.
PLANNED = (
    SEEDS["local-hashing.yaml"]
    .replace("path: ../.ragflow/qdrant", "path: store")
    .replace("- path: corpus", "- path: small")
)
assert SEEDS["local-hashing.yaml"] != PLANNED


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of ``pipelines/`` (the seeds' sources and judged queries) and a small corpus."""
    root = tmp_path_factory.mktemp("fuzz") / "pipelines"
    shutil.copytree(PIPELINES, root)
    (root / "small").mkdir()
    (root / "small" / "a.md").write_text("# Lists\n\nLists hold items in order.\n")
    (root / "small" / "b.txt").write_text("Dictionaries map keys to values.\n")
    return root


Run = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def cli(folder: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Run:
    """``main(argv)`` from the copy, with its exit code, stdout and stderr."""
    monkeypatch.chdir(folder)

    def run(argv: list[str]) -> tuple[int, str, str]:
        capsys.readouterr()
        try:
            code = main(argv)
        except SystemExit as exit:  # argparse only: anything else escaping is a bug
            code = exit.code if isinstance(exit.code, int) else 1
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        return code, out, err

    return run


# Mutations --------------------------------------------------------------------

ODD = [
    "\t", "\x00", "${", "${UNSET_FUZZ_VARIABLE}", "${X:-", "$$", "}", "{", "[", "]", ":",
    ": ", "- ", "#", "&a ", "*a", "*nowhere", "!!", "!!python/object:os.system ", "%", "@",
    "`", "'", '"', "\\", "\ufeff", "\r", "\x85", "\u2028", "? ", "<<: *a", "\n---\n",
    "\n...\n", "|", ">", "\x07", "\x1b", "\ud7ff", "\U0001f600", ",", "\n", "  ",
]  # fmt: skip
REPLACEMENTS = [
    "{a: 1}", "[1, 2]", "{}", "[]", "null", "~", "-1", "0", "1e999", ".nan", '""', "''",
    "true", "!!binary xx", "*nowhere", "&anchor x", "{type: hashing}", "[{}]", "2020-01-01",
    "9" * 400, "${UNSET_FUZZ_VARIABLE}", "${UNSET_FUZZ_VARIABLE:-{a: 1}}", '"${X:-[1]}"',
    "\n      nested: 1", "\n      - 1",
]  # fmt: skip
SCALAR_LINE = re.compile(r"^(\s*(?:- )?[\w-]+:)[ \t]+(\S.*)$")
TEXT = st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="/."), max_size=4)


def _line(draw: st.DrawFn, lines: list[str]) -> int:
    return draw(st.integers(0, max(len(lines) - 1, 0)))


@st.composite
def mutants(draw: st.DrawFn, seeds: list[str]) -> str:
    text = draw(st.sampled_from(seeds))
    for _ in range(draw(st.integers(1, 3))):
        lines = text.splitlines(keepends=True) or [""]
        operation = draw(
            st.sampled_from(
                ["truncate", "indent", "delete", "duplicate", "swap", "insert", "insert"]
            )
        )
        if operation == "truncate":
            text = text[: draw(st.integers(0, len(text)))]
        elif operation == "indent":
            i = _line(draw, lines)
            shift = draw(st.integers(-4, 4))
            body = lines[i].lstrip(" ")
            lines[i] = " " * max(len(lines[i]) - len(body) + shift, 0) + body
            text = "".join(lines)
        elif operation in ("delete", "duplicate"):
            i = _line(draw, lines)
            lines[i : i + 1] = [] if operation == "delete" else [lines[i], lines[i]]
            text = "".join(lines)
        elif operation == "swap":
            candidates = [i for i, line in enumerate(lines) if SCALAR_LINE.match(line.rstrip())]
            if candidates:
                i = draw(st.sampled_from(candidates))
                key = SCALAR_LINE.match(lines[i].rstrip())
                assert key is not None
                value = draw(st.sampled_from(REPLACEMENTS) | TEXT)
                lines[i] = f"{key.group(1)} {value}\n"
                text = "".join(lines)
        else:
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.sampled_from(ODD) | TEXT) + text[at:]
    return text


def write(folder: Path, text: str) -> None:
    (folder / CASE).write_text(text, encoding="utf-8", newline="")


def assert_issues(err: str) -> None:
    """Every line names the file, line and column: nothing else, nothing on two lines."""
    assert err.endswith("\n"), err
    for line in err.splitlines():
        assert ISSUE.match(line), line


def check_validate(run: Run, as_json: bool) -> bool:
    """Validate the case; whether it is valid."""
    code, out, err = run(["validate", *(["--json"] if as_json else []), CASE])
    assert code in (0, 2), (code, out, err)  # 2: invalid, as from every command
    if as_json:
        issues = json.loads(out)["issues"]
        assert err == ""
        assert bool(issues) == (code == 2)
        for issue in issues:
            assert issue["file"] == CASE and issue["line"] >= 1 and issue["column"] >= 1
            assert "\n" not in issue["message"], issue
    elif code == 0:
        assert (out, err) == ("1 file(s) valid\n", "")
    else:
        assert out == ""
        assert_issues(err)
    return code == 0


UNCLOSED_FLOW = (
    "version: 1\n"
    "knowledge_bases:\n"
    "  - name: docs\n"
    "    chunker: {type: approx_token, parameters: {chunk_size: 256\n"
)


# A key that is a mapping holding a mapping: ruamel hashed it and raised TypeError.
UNHASHABLE_KEY = "version: 1\n{vector_stores: , local: {type: qdrant}}: y\n"


@given(text=mutants(list(SEEDS.values())), as_json=st.booleans())
@example(text=UNCLOSED_FLOW, as_json=False)  # IndexError in the ${VAR} hint (issue 35)
@example(text=UNCLOSED_FLOW.replace("{type", "{path: ${X}, type"), as_json=False)
@example(text="version: 1\nname: a\x00b\n", as_json=False)  # two lines, the second without
@example(text="a:" + " [" * 400 + "]" * 400, as_json=False)  # RecursionError in ruamel
@example(text="a:" + " [" * 100 + "]" * 100, as_json=True)  # RecursionError in the checks
@example(text=SEEDS["local.yaml"].replace("parameters:", "p\u2028arameters:"), as_json=False)
@example(text=UNHASHABLE_KEY, as_json=False)  # TypeError in ruamel (long run, stop 34)
# A store named with a line separator, listed under "(defined: ...)" (long run, stop 35)
@example(text=SEEDS["local.yaml"].replace("  local:", "  l\u2028ocal:", 1), as_json=False)
@fuzzing
def test_validate_reports_a_malformed_file_line_by_line(
    cli: Run, folder: Path, text: str, as_json: bool
) -> None:
    write(folder, text)
    check_validate(cli, as_json)


@given(text=mutants([PLANNED]))
@example(text=PLANNED)
@example(text=PLANNED.replace("chunk_size: 256", "chunk_size: {a: 1}"))
@example(text=PLANNED.replace("parameters:", '"p\\narameters":'))  # long run: a path on 2 lines
@example(text=UNHASHABLE_KEY)
@fuzzing
def test_plan_on_a_malformed_file_says_where_or_plans(cli: Run, folder: Path, text: str) -> None:
    write(folder, text)
    code, out, err = cli(["plan", CASE])
    assert code in (0, 1, 2), (code, out, err)  # 1: the run would fail
    if code == 2:  # the file is invalid: its issues, as validate gives them
        assert out == ""
        assert_issues(err)
    else:
        assert re.search(r"^python-docs: would add \d+", out, re.MULTILINE), out


# One plain test per bug the fuzzers found --------------------------------------


def test_a_file_ending_inside_an_unclosed_flow_mapping_gives_file_and_line(
    cli: Run, folder: Path
) -> None:
    write(folder, UNCLOSED_FLOW)
    code, _, err = cli(["validate", CASE])
    assert code == 2
    # Reported where the mapping opens, the place to close it from, not at the end of the file.
    assert err == (
        f"{CASE}:4:47: YAML syntax: the {{...}} that opens here is never closed (the file ends "
        "inside it): close it with '}'\n"
    )


def test_the_var_hint_still_comes_when_the_flow_mapping_holds_an_unquoted_reference(
    cli: Run, folder: Path
) -> None:
    # A `{` opens a mapping inside `{...}`: the error is at the reference, not at the end.
    write(folder, UNCLOSED_FLOW.replace("{type", "{path: ${X}, type"))
    code, _, err = cli(["validate", CASE])
    assert code == 2
    assert err == (
        f"{CASE}:4:22: YAML syntax: the {{...}} that opens at line 4, column 14 is not closed "
        "where line 4 goes on: close it with '}', and quote a value that holds ', ' or ': '; "
        'quote a ${VAR} inside a {...} mapping: path: "${VAR}"\n'
    )


def test_a_nul_character_is_one_issue_at_its_line_and_column(cli: Run, folder: Path) -> None:
    write(folder, "version: 1\nname: a\x00b\n")
    code, _, err = cli(["validate", CASE])
    assert code == 2
    assert err == (
        f"{CASE}:2:8: YAML syntax: unacceptable character #x0000: "
        "special characters are not allowed\n"
    )


def test_a_file_nested_deeper_than_ruamel_reads_is_an_issue(cli: Run, folder: Path) -> None:
    write(folder, "a:" + " [" * 400 + "]" * 400)
    code, _, err = cli(["validate", CASE])
    assert code == 2
    assert err == (
        f"{CASE}:1:1: YAML nested too deeply to read; a pipeline file needs at most 64 levels\n"
    )


def test_a_file_nested_deeper_than_64_levels_is_an_issue_there(cli: Run, folder: Path) -> None:
    write(folder, "version: 1\nknowledge_bases:" + " [" * 100 + "]" * 100 + "\n")
    code, _, err = cli(["validate", CASE])
    assert code == 2
    assert f"{CASE}:2:" in err and "nested more than 64 levels deep" in err
    assert_issues(err)


def test_a_path_holding_a_nul_character_is_an_issue() -> None:
    from ragflow_config.pipeline._validate import check_file

    loaded, issues = check_file("pipe\x00line.yaml")
    assert loaded is None
    assert [(i.line, i.column) for i in issues] == [(1, 1)]
    assert issues[0].message.startswith("cannot read: ")


def test_a_key_holding_a_line_break_is_named_on_one_line(cli: Run, folder: Path) -> None:
    # Found by the long run: the path printed the key as it is, on two lines.
    write(folder, PLANNED.replace("    chunker:", '    "chunk\\ner":'))
    code, _, err = cli(["validate", CASE])
    assert code == 2
    assert "knowledge_bases[0].chunk\\ner: unknown key 'chunk\\ner'" in err
    assert_issues(err)


def test_a_key_that_is_a_mapping_is_named_at_its_place(cli: Run, folder: Path) -> None:
    write(folder, UNHASHABLE_KEY)
    code, _, err = cli(["validate", CASE])
    assert code == 2
    assert (
        err == f"{CASE}:2:1: YAML syntax: this key is a mapping or a list; a key is a plain name\n"
    )
