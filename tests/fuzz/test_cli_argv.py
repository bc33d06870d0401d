"""Fuzzing the command line: no argv gives a traceback, and every bounded value is bounded.

Every command's handler is replaced by a stub that records what it was given,
so nothing here starts a server, opens a store or reads a file: what is fuzzed
is the parser. A bad value must stop there, with exit 2, argparse's usage and
``argument --flag: ...``; a value the parser lets through must be in range.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from ragflow_config import __version__
from ragflow_config._search_input import (
    MAX_QUERY_CHARS,
    MAX_TOP_K,
    SearchInputError,
    checked_score_threshold,
    checked_top_k,
)
from ragflow_config.cli import _main, main
from ragflow_config.cli._kb_commands import parse_filter
from ragflow_config.cli._main import build_parser

from ._profile import fuzzing

# The accepted values of each bounded flag, as a predicate on the text given.
# These are the promises; the parser's types are what is tested against them.


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _int_in(low: int, high: float) -> Callable[[str], bool]:
    def accepts(text: str) -> bool:
        value = _int(text)
        return value is not None and low <= value <= high

    return accepts


def _float_in(low: float, high: float) -> Callable[[str], bool]:
    def accepts(text: str) -> bool:
        value = _float(text)
        return value is not None and math.isfinite(value) and low <= value <= high

    return accepts


def _shard(text: str) -> bool:
    index, _, count = text.partition("/")
    i, n = _int(index), _int(count)
    return i is not None and n is not None and 1 <= i <= n


# command -> the arguments that make it parse, and its bounded flags with the
# range the error must name (None: the message is the flag's own check).
MINIMAL: dict[str, list[str]] = {
    "init": [],
    "validate": ["p.yaml"],
    "schema": [],
    "types": [],
    "run": ["p.yaml"],
    "plan": ["p.yaml"],
    "verify": ["p.yaml"],
    "search": ["p.yaml", "kb", "what"],
    "list": ["p.yaml", "kb"],
    "delete": ["p.yaml", "kb", "doc"],
    "reset": ["p.yaml", "kb"],
    "rollback": ["p.yaml", "kb"],
    "copy": ["p.yaml", "kb", "--from", "store"],
    "eval": ["p.yaml"],
    "chat": ["p.yaml"],
    "serve": ["p.yaml"],
}
BOUNDED: dict[tuple[str, str], tuple[Callable[[str], bool], str | None]] = {
    ("run", "--workers"): (_int_in(0, 256), "from 0 to 256"),
    ("run", "--shard"): (_shard, None),
    ("search", "--top-k"): (_int_in(1, MAX_TOP_K), f"from 1 to {MAX_TOP_K}"),
    ("search", "--score-threshold"): (_float_in(-math.inf, math.inf), "number"),
    ("serve", "--port"): (_int_in(0, 65535), "from 0 to 65535"),
    ("serve", "--max-body-bytes"): (_int_in(1024, 1 << 30), "from 1024 to 1073741824"),
    ("serve", "--max-query-chars"): (_int_in(1, math.inf), ">= 1"),
    ("serve", "--drain-seconds"): (_float_in(0, 24 * 3600), "from 0 to 86400"),
    # One query cap for every entry point (issue 53): a question is a query.
    ("chat", "--question"): (
        lambda text: bool(text.strip()) and len(text) <= MAX_QUERY_CHARS,
        "question is",
    ),
}


class Outcome:
    def __init__(self, code: int, out: str, err: str, seen: argparse.Namespace | None) -> None:
        self.code, self.out, self.err, self.seen = code, out, err, seen


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Any:
    """``main(argv)`` with every handler a stub: the parser alone, and what it hands on."""
    seen: list[argparse.Namespace] = []

    def stub(args: argparse.Namespace) -> int:
        seen.append(args)
        return 0

    real = _main.build_parser

    def build_parser() -> argparse.ArgumentParser:
        parser = real()
        for sub in _subparsers(parser).values():
            sub.set_defaults(handler=stub)
        return parser

    monkeypatch.setattr(_main, "build_parser", build_parser)

    def call(argv: list[str]) -> Outcome:
        seen.clear()
        capsys.readouterr()
        try:
            code = main(argv)
        except SystemExit as exit:
            code = exit.code if isinstance(exit.code, int) else 1
        out, err = capsys.readouterr()
        assert "Traceback" not in out + err
        return Outcome(code, out, err, seen[0] if seen else None)

    return call


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


@functools.cache
def _options(command: str) -> list[argparse.Action]:
    sub = _subparsers(build_parser())[command]
    return [a for a in sub._actions if a.option_strings and a.dest not in ("help",)]


def test_every_command_is_fuzzed() -> None:
    assert set(_subparsers(build_parser())) == set(MINIMAL)
    for command, flag in BOUNDED:
        assert any(flag in a.option_strings for a in _options(command)), (command, flag)


def assert_usage_error(outcome: Outcome) -> None:
    assert outcome.code == 2, (outcome.code, outcome.err)
    assert outcome.seen is None  # the handler never ran
    if outcome.err == "":  # under --json: the JSON error on stdout, as every command's
        message = json.loads(outcome.out)["error"]["message"]
        assert re.match(r"ragflow-config( \w+)?: .+", message), message
        return
    assert outcome.err.startswith("usage: ragflow-config")
    assert re.search(r"^ragflow-config( \w+)?: error: .+", outcome.err, re.MULTILINE)


# Texts a numeric flag is likely to be given, right or wrong.
NUMBERS = st.one_of(
    st.integers(-(10**6), 10**6).map(str),
    st.integers(-(2**70), 2**70).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(str),
    st.sampled_from(
        [
            "",
            " ",
            "0",
            "-0",
            "1",
            "50",
            "51",
            "256",
            "257",
            "65535",
            "65536",
            "1024",
            "1023",
            "86400",
            "86401",
            "1e3",
            "1.0",
            "0x10",
            "1_000",
            " 7 ",
            "nan",
            "-inf",
            "inf",
            "1e309",
            "9" * 5000,
            "1/2",
            "2/1",
            "0/0",
            "1/0",
            "3/3",
            "-1/2",
            "a/b",
            "1//2",
        ]
    ),
    st.text(max_size=12),
)


@given(
    flag=st.sampled_from(sorted(BOUNDED)),
    value=NUMBERS,
)
@example(flag=("run", "--workers"), value="-1")  # the traceback of issue 35
@example(flag=("search", "--top-k"), value="0")  # "no results", while HTTP answers 400
@example(flag=("search", "--top-k"), value="16385")  # over Milvus's cap, under Qdrant's
@example(flag=("serve", "--port"), value="70000")  # pydantic's ValidationError, a traceback
@example(flag=("serve", "--drain-seconds"), value="nan")  # idem
@example(flag=("search", "--score-threshold"), value="nan")  # dropped nothing, silently
@example(flag=("serve", "--max-body-bytes"), value="10")  # silently raised to 1024
@example(flag=("chat", "--question"), value=" ")
@fuzzing
def test_a_bounded_flag_takes_its_range_and_refuses_the_rest_at_parse_time(
    cli: Callable[[list[str]], Outcome], flag: tuple[str, str], value: str
) -> None:
    command, option = flag
    accepts, words = BOUNDED[flag]
    # `--flag=value`: a value starting with `-` is the flag's, not another option.
    outcome = cli([command, f"{option}={value}", *MINIMAL[command]])
    if accepts(value):
        assert outcome.code == 0, outcome.err
        assert outcome.seen is not None
    else:
        assert_usage_error(outcome)
        assert f"argument {option}" in outcome.err or f"argument -q/{option}" in outcome.err
        if words is not None:
            assert words in outcome.err


def test_top_k_and_score_threshold_are_refused_in_the_search_checks_words(
    cli: Callable[[list[str]], Outcome],
) -> None:
    for value, parsed in (("0", 0), ("51", 51), ("16385", 16385), ("1.5", "1.5"), ("x", "x")):
        with pytest.raises(SearchInputError) as refused:
            checked_top_k(parsed)
        outcome = cli(["search", "p.yaml", "kb", "q", "--top-k", value])
        assert_usage_error(outcome)
        assert f"argument --top-k: {refused.value}\n" in outcome.err
    for value, number in (("nan", math.nan), ("inf", math.inf), ("-1e999", -math.inf)):
        with pytest.raises(SearchInputError) as refused:
            checked_score_threshold(number)
        outcome = cli(["search", "p.yaml", "kb", "q", f"--score-threshold={value}"])
        assert_usage_error(outcome)
        assert f"argument --score-threshold: {refused.value}\n" in outcome.err


def test_run_workers_minus_one_exits_2_naming_the_flag(
    cli: Callable[[list[str]], Outcome],
) -> None:
    outcome = cli(["run", "p.yaml", "--workers", "-1"])
    assert_usage_error(outcome)
    assert "argument --workers: expected an integer from 0 to 256, not '-1'" in outcome.err
    assert cli(["run", "p.yaml", "--workers", "0"]).seen.workers == 0  # type: ignore[union-attr]


def test_search_top_k_0_exits_2() -> None:
    # Through the real handler: the refusal comes before the file is read.
    with pytest.raises(SystemExit) as exit:
        main(["search", "no-such-file.yaml", "kb", "what", "--top-k", "0"])
    assert exit.value.code == 2


@pytest.mark.parametrize("words", [["   "], [""], ["", " ", "\t"]])
def test_a_blank_search_query_exits_2(
    cli: Callable[[list[str]], Outcome], words: list[str]
) -> None:
    outcome = cli(["search", "p.yaml", "kb", *words])
    assert_usage_error(outcome)
    assert "argument QUERY: query is empty; say what to find" in outcome.err


def test_search_words_are_one_query(cli: Callable[[list[str]], Outcome]) -> None:
    outcome = cli(["search", "p.yaml", "kb", "", "lists", " sorted"])
    assert outcome.code == 0
    assert outcome.seen is not None and outcome.seen.query == " lists  sorted"


def test_serve_limits_are_passed_as_given(cli: Callable[[list[str]], Outcome]) -> None:
    outcome = cli(["serve", "p.yaml", "--max-body-bytes", "1024", "--drain-seconds", "0"])
    assert outcome.seen is not None
    assert (outcome.seen.max_body_bytes, outcome.seen.drain_seconds) == (1024, 0.0)


# The generic fuzzer: any command, its own options with any values, unknown
# options, odd positionals, in any order.

ODD = st.one_of(
    NUMBERS,
    st.sampled_from(["-", "--", "-x", "--nope", "--json=1", "-h=", "--kb", "=", "-1", "-1e5"]),
    st.text(st.characters(blacklist_categories=["Cs"], blacklist_characters="\x00"), max_size=8),
)


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(MINIMAL)))
    words = list(MINIMAL[command])
    if words and draw(st.booleans()):
        words[draw(st.integers(0, len(words) - 1))] = draw(ODD)
    if draw(st.integers(0, 4)) == 0:
        words.pop() if words else words.append(draw(ODD))
    for _ in range(draw(st.integers(0, 4)) if _options(command) else 0):
        action = draw(st.sampled_from(_options(command)))
        option = draw(st.sampled_from(action.option_strings))
        taken: list[str] = [option]
        if action.nargs != 0:
            value = draw(ODD)
            taken = [f"{option}={value}"] if draw(st.booleans()) else [option, value]
        if option in ("--version", "-h", "--help"):
            continue
        at = draw(st.integers(0, len(words)))
        words[at:at] = taken
    if draw(st.integers(0, 5)) == 0:
        words.insert(
            draw(st.integers(0, len(words))),
            "--" + draw(st.from_regex(r"[a-z-]{1,8}", fullmatch=True)),
        )
    return [command, *words]


def _bounded_values(command: str, seen: argparse.Namespace) -> Iterator[tuple[str, Any]]:
    for (name, flag), _ in BOUNDED.items():
        if name == command:
            yield flag, getattr(seen, flag.lstrip("-").replace("-", "_"))


@given(argv=argvs())
@example(argv=["run", "p.yaml", "--workers", "-1"])
@example(argv=["search", "p.yaml", "kb", "--top-k=0", ""])
@example(argv=["search", "p.yaml", "kb", "   "])
@example(argv=["run", "p.yaml", "--shard", "1/0"])
@example(argv=["serve", "p.yaml", "--port=-1"])
@example(argv=["run", "p.yaml", "--shard=1/2", "--prune-only"])
@example(argv=["list", "p.yaml", "kb", "--he"])  # found by the long run: help, exit 0
@example(argv=["run", "--workers=--", "-"])  # found by the long run: workers=[]
@example(argv=["serve", "p.yaml", "--kb=--"])
@fuzzing
def test_no_argv_gives_a_traceback_and_what_parses_is_in_range(
    cli: Callable[[list[str]], Outcome], argv: list[str]
) -> None:
    outcome = cli(argv)
    if outcome.seen is None and outcome.code == 0:  # `--he` is `--help`, as argparse abbreviates
        assert outcome.out.startswith("usage: ragflow-config") or outcome.out == f"{__version__}\n"
        return
    if outcome.seen is None:
        assert_usage_error(outcome)
        return
    assert outcome.code == 0
    command = argv[0]
    for action in _options(command):  # one value each: never the empty list of `--kb=--`
        value = getattr(outcome.seen, action.dest)
        if action.nargs is None and isinstance(action, argparse._AppendAction):
            assert value is None or all(not isinstance(item, list) for item in value), value
        elif action.nargs is None:
            assert not isinstance(value, list), (action.dest, value)
    for flag, value in _bounded_values(command, outcome.seen):
        if value is None:
            continue
        if flag == "--top-k":
            assert checked_top_k(value) == value
        elif flag == "--score-threshold":
            assert math.isfinite(value)
        elif flag == "--shard":
            index, count = value
            assert 0 <= index < count
        elif flag == "--question":
            assert value.strip()
        else:
            accepts, _ = BOUNDED[(command, flag)]
            assert accepts(str(value)), (flag, value)
    if command == "search":
        assert outcome.seen.query.strip()


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        (["a=1", "a.b=2"], "--filter 'a.b=2': another --filter gives a a value"),
        (["a.b.c=1", "a.b=2", "a.b.c.d=3"], "--filter 'a.b=2': another --filter names keys"),
        (["x.y=1", "x.y.z=2"], "--filter 'x.y.z=2': another --filter gives x.y a value"),
    ],
)
def test_filters_that_give_one_key_a_value_and_keys_are_refused(
    pairs: list[str], message: str
) -> None:
    # `a=1` then `a.b=2` was a TypeError (int item assignment) after the pipeline loaded.
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_filter(pairs)
    assert parse_filter(["a.b=1", "a.c=2", "a.b=3"]) == {"a": {"b": 3, "c": 2}}


@pytest.mark.parametrize("option", ["--workers", "--kb", "--executor", "--shard"])
def test_a_double_dash_given_as_an_options_value_exits_2(
    option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # Python 3.11's argparse dropped it and gave the command `[]` (`--workers=--`:
    # a TypeError in the parser processes' start), whatever the option's type.
    with pytest.raises(SystemExit) as exit:
        main(["run", "p.yaml", f"{option}=--"])
    assert exit.value.code == 2
    assert f"argument {option}: expected one argument, not '--'" in capsys.readouterr().err
