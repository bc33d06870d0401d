"""Run ragflow-config's commands on pipeline files and write one Markdown report.

    python action/report.py --commands "validate plan eval" [--base REF] [--html-dir DIR] \
        --out REPORT FILE...

Commands, in the order given: ``validate`` (all files at once), ``plan`` and ``eval`` (each
file, ``--format markdown``; ``eval`` with ``--against REF`` when there is a base ref, by
default ``origin/$GITHUB_BASE_REF`` on a pull request, and with ``--html`` into ``--html-dir``
when one is given: the charts the action uploads as an artifact) and ``run`` (each file). Their
standard output is the report; what they print on standard error is shown beside it.
A failed ``validate`` skips the other commands (they would fail on the same errors).

The report goes to ``--out``; ``exit-code`` (the first non-zero exit of a command, else 0)
and ``report`` (its path) go to ``$GITHUB_OUTPUT``. The script exits 0 once the report is
written, whatever the commands did, so the summary and the PR comment are still made; the
action fails the job afterwards. ``--fail`` exits with the commands' code instead (for use
outside the action). Exit 2 for a usage error.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

COMMANDS = ("validate", "plan", "eval", "run")
# Commands whose standard output is Markdown; the others' is shown as text.
MARKDOWN = ("plan", "eval")


@dataclass
class Result:
    command: str
    argv: list[str]
    exit_code: int | None  # None: not run
    stdout: str = ""
    stderr: str = ""


def parse_commands(text: str) -> list[str]:
    """``"validate, plan eval"`` -> ``["validate", "plan", "eval"]``; ValueError for others."""
    names = [name for name in re.split(r"[\s,]+", text.strip()) if name]
    if not names:
        raise ValueError(f"no command given; choose from {', '.join(COMMANDS)}")
    unknown = [name for name in names if name not in COMMANDS]
    if unknown:
        raise ValueError(f"unknown command {unknown[0]!r}; choose from {', '.join(COMMANDS)}")
    return list(dict.fromkeys(names))


def base_ref(given: str) -> str:
    """The ref eval compares against: the one given, else the PR's base branch, else none."""
    if given.strip():
        return given.strip()
    branch = os.environ.get("GITHUB_BASE_REF", "").strip()
    return f"origin/{branch}" if branch else ""


def ensure_ref(ref: str) -> None:
    """Fetch ``origin/BRANCH`` when a shallow checkout lacks it (eval reads files at it)."""
    if not ref or shutil.which("git") is None:
        return
    verify = ["git", "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"]
    if subprocess.run(verify, capture_output=True).returncode == 0:
        return
    if ref.startswith("origin/"):
        branch = ref.removeprefix("origin/")
        print(f"fetching {ref} for eval --against", file=sys.stderr)
        fetch = ["git", "fetch", "--no-tags", "--depth=1", "origin"]
        subprocess.run([*fetch, f"+refs/heads/{branch}:refs/remotes/{ref}"], check=False)


def invocations(
    commands: list[str], files: list[str], base: str, html_dir: Path | None = None
) -> list[tuple[str, list[str]]]:
    """Each command's argument lists, after the program name."""
    planned: list[tuple[str, list[str]]] = []
    for command in commands:
        if command == "validate":
            planned.append((command, ["validate", *files]))
            continue
        for number, file in enumerate(files, 1):
            if command == "plan":
                planned.append((command, ["plan", file, "--format", "markdown"]))
            elif command == "eval":
                against = ["--against", base] if base else []
                # Numbered: two files of one name in different folders get a report each.
                html = (
                    []
                    if html_dir is None
                    else ["--html", str(html_dir / f"{number}-{Path(file).stem}.html")]
                )
                planned.append((command, ["eval", file, *against, "--format", "markdown", *html]))
            else:
                planned.append((command, ["run", file]))
    return planned


def execute(program: str | None, planned: list[tuple[str, list[str]]]) -> list[Result]:
    results: list[Result] = []
    validate_failed = False
    for command, args in planned:
        argv = ["ragflow-config", *args]
        if validate_failed:
            results.append(Result(command, argv, None))
            continue
        if program is None:
            message = "ragflow-config: command not found (is the package installed?)\n"
            results.append(Result(command, argv, 127, "", message))
        else:
            done = subprocess.run(
                [program, *args], capture_output=True, text=True, encoding="utf-8", errors="replace"
            )
            results.append(Result(command, argv, done.returncode, done.stdout, done.stderr))
        validate_failed = command == "validate" and results[-1].exit_code != 0
    return results


def fenced(text: str, info: str = "") -> str:
    """A fenced code block holding ``text`` whatever backticks it contains."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip()}\n{fence}\n"


def section(result: Result) -> str:
    title = f"### `{shlex.join(result.argv)}`\n\n"
    if result.exit_code is None:
        return title + "Not run: `validate` failed.\n"
    parts = [title]
    failed = result.exit_code != 0
    if failed:
        parts.append(f"**Failed** (exit {result.exit_code}).\n\n")
    if result.command in MARKDOWN:
        if result.stdout.strip():
            parts.append(result.stdout.rstrip() + "\n\n")
        if result.stderr.strip():
            if failed:
                parts.append(fenced(result.stderr, "text"))
            else:
                parts.append("<details><summary>messages</summary>\n\n")
                parts.append(fenced(result.stderr, "text") + "\n</details>\n")
    else:
        output = "\n".join(text.rstrip() for text in (result.stdout, result.stderr) if text.strip())
        parts.append(fenced(output or "(no output)", "text"))
    return "".join(parts).rstrip() + "\n"


def first_failure(results: list[Result]) -> Result | None:
    return next((r for r in results if r.exit_code not in (0, None)), None)


def render(results: list[Result]) -> str:
    failure = first_failure(results)
    if failure is None:
        status = f"✅ {len(results)} command(s) succeeded."
    else:
        failed = sum(1 for r in results if r.exit_code not in (0, None))
        status = (
            f"❌ {failed} of {len(results)} command(s) failed; first "
            f"`{shlex.join(failure.argv)}` (exit {failure.exit_code})."
        )
    parts = ["## ragflow-config\n\n", status + "\n\n"]
    parts.extend(section(result) + "\n" for result in results)
    footer = run_footer()
    if footer:
        parts.append(footer + "\n")
    return "".join(parts).rstrip() + "\n"


def run_footer() -> str:
    """``<sub>commit abc1234 · workflow run</sub>`` from the variables GitHub sets, if any."""
    sha = os.environ.get("GITHUB_SHA", "")[:7]
    server = os.environ.get("GITHUB_SERVER_URL", "")
    repository = os.environ.get("GITHUB_REPOSITORY", "")
    run_id = os.environ.get("GITHUB_RUN_ID", "")
    pieces = []
    if sha:
        pieces.append(f"commit {sha}")
    if server and repository and run_id:
        pieces.append(f"[workflow run]({server}/{repository}/actions/runs/{run_id})")
    return f"<sub>{' · '.join(pieces)}</sub>" if pieces else ""


def write_outputs(outputs: dict[str, str]) -> None:
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.writelines(f"{name}={value}\n" for name, value in outputs.items())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="report.py", description=__doc__.splitlines()[0])
    parser.add_argument("--commands", required=True, help="e.g. 'validate plan eval'")
    parser.add_argument("--base", default="", help="eval --against REF (default: PR's base)")
    parser.add_argument("--out", required=True, type=Path, help="the Markdown report's path")
    parser.add_argument(
        "--html-dir", type=Path, help="eval also writes its HTML report into this folder"
    )
    parser.add_argument("--fail", action="store_true", help="exit with the commands' code")
    parser.add_argument("files", nargs="*", metavar="FILE")
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    try:
        commands = parse_commands(args.commands)
    except ValueError as exc:
        parser.error(str(exc))
    if not args.files:
        parser.error("no pipeline file given (the action's `files` input)")
    base = base_ref(args.base) if "eval" in commands else ""
    if base:
        ensure_ref(base)
    if args.html_dir is not None:
        args.html_dir.mkdir(parents=True, exist_ok=True)
    planned = invocations(commands, args.files, base, args.html_dir)
    results = execute(shutil.which("ragflow-config"), planned)
    text = render(results)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    failure = first_failure(results)
    exit_code = 0 if failure is None else (failure.exit_code or 1)
    write_outputs({"exit-code": str(exit_code), "report": str(args.out.resolve())})
    for result in results:  # the job's log shows each command's output in a group
        state = "not run" if result.exit_code is None else f"exit {result.exit_code}"
        print(f"::group::{shlex.join(result.argv)}: {state}")
        print((result.stdout + result.stderr).rstrip())
        print("::endgroup::")
    return exit_code if args.fail else 0


if __name__ == "__main__":
    sys.exit(main())
