"""Run AgentScope's own RAG and embedding tests against ragflow_config (issue 20).

Run by hand, never by the test suite:

    python bench/agentscope_tests.py /path/to/agentscope-checkout
    python bench/agentscope_tests.py --git-dir /work/.mirror/agentscope-ai+agentscope/repo

The checkout (a work tree, or a bare git directory read with ``git archive``)
is read at run time; none of AgentScope's code is kept in this repository.
Its test files are copied into a temporary folder, their imports rewritten
from ``agentscope.`` to ``ragflow_config.``, and pytest runs them with the
interpreter running this script (the project's venv). One line per file:
passed / failed / errors / skipped of the tests the file defines; a file
that does not import counts every test as an error.

AgentScope's ``tests/utils.py`` imports parts of AgentScope this project
does not model (the app, formatters, workspaces); the harness keeps only its
top-level definitions that use none of those imports (``AnyString``,
``AnyValue``, ...), so the test files' ``from utils import ...`` still works.
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

TEST_FILES = (
    "rag_parser_test.py",
    "rag_chunker_approx_token_test.py",
    "rag_vdb_qdrant_test.py",
    "rag_vdb_milvus_lite_test.py",
    "middleware_rag_test.py",
    "embedding_openai_test.py",
    "embedding_dashscope_test.py",
    "embedding_ollama_test.py",
    "embedding_gemini_test.py",
)

# `from agentscope.x import` / `import agentscope.x`, at any indentation
# (some tests import inside a function); nothing else is rewritten.
_IMPORT = re.compile(r"^(\s*)(from|import)(\s+)agentscope\.", re.MULTILINE)


def rewrite_imports(source: str) -> str:
    """``agentscope.`` → ``ragflow_config.`` in import statements only."""
    return _IMPORT.sub(r"\1\2\3ragflow_config.", source)


def trim_utils(source: str) -> str:
    """Keep the top-level statements of AgentScope's ``tests/utils.py``
    that neither import from agentscope nor use a name imported from it."""
    tree = ast.parse(source)
    foreign: set[str] = set()
    kept: list[ast.stmt] = []
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            names = [alias.asname or alias.name for alias in node.names]
            from_agentscope = (module or "").startswith("agentscope") or any(
                alias.name.startswith("agentscope") for alias in node.names
            )
            if from_agentscope:
                foreign.update(name.split(".")[0] for name in names)
                continue
            kept.append(node)
            continue
        used = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if used & foreign:
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                foreign.add(node.name)
            continue
        kept.append(node)
    return ast.unparse(ast.Module(body=kept, type_ignores=[]))


def count_tests(source: str) -> int:
    """The number of ``test*`` functions and methods a file defines."""
    tree = ast.parse(source)
    return sum(
        1
        for node in ast.walk(tree)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and node.name.startswith("test")
    )


def materialise(checkout: Path | None, git_dir: Path | None, into: Path) -> Path:
    """The AgentScope ``tests`` folder, from a work tree or a git directory."""
    if checkout is not None:
        return checkout / "tests"
    assert git_dir is not None
    into.mkdir(parents=True, exist_ok=True)
    archive = subprocess.run(
        ["git", f"--git-dir={git_dir}", "archive", "HEAD", "tests"],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into / "tests"


def tally(report: Path, files: list[str]) -> dict[str, dict[str, int]]:
    """passed / failed / errors / skipped per file from a JUnit XML report."""
    counts = {f: {"passed": 0, "failed": 0, "errors": 0, "skipped": 0} for f in files}
    for case in ET.parse(report).getroot().iter("testcase"):
        classname = case.get("classname", "")
        module = classname.split(".")[0] + ".py"
        if module not in counts:
            continue
        if case.find("failure") is not None:
            counts[module]["failed"] += 1
        elif case.find("error") is not None:
            counts[module]["errors"] += 1
        elif case.find("skipped") is not None:
            counts[module]["skipped"] += 1
        else:
            counts[module]["passed"] += 1
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "checkout", nargs="?", type=Path, help="an AgentScope source checkout (work tree)"
    )
    parser.add_argument(
        "--git-dir", type=Path, help="read the tests from this git directory's HEAD instead"
    )
    parser.add_argument(
        "--keep", action="store_true", help="keep the temporary folder and print its path"
    )
    parser.add_argument("--verbose", "-v", action="store_true", help="show pytest's own output")
    args = parser.parse_args(argv)
    if (args.checkout is None) == (args.git_dir is None):
        parser.error("give either a checkout path or --git-dir")

    work = Path(tempfile.mkdtemp(prefix="as-tests-"))
    try:
        source_dir = materialise(args.checkout, args.git_dir, work / "src")
        run_dir = work / "run"
        run_dir.mkdir()
        totals: dict[str, int] = {}
        present: list[str] = []
        for name in TEST_FILES:
            path = source_dir / name
            if not path.is_file():
                print(f"{name}: not in this checkout", file=sys.stderr)
                continue
            text = path.read_text(encoding="utf-8")
            (run_dir / name).write_text(rewrite_imports(text), encoding="utf-8")
            totals[name] = count_tests(text)
            present.append(name)
        utils = source_dir / "utils.py"
        if utils.is_file():
            (run_dir / "utils.py").write_text(
                trim_utils(utils.read_text(encoding="utf-8")), encoding="utf-8"
            )
        shutil.rmtree(work / "src", ignore_errors=True)

        report = work / "report.xml"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            f"--rootdir={run_dir}",
            f"--junitxml={report}",
            "-q",
            "--continue-on-collection-errors",
            *present,
        ]
        output = subprocess.run(command, cwd=run_dir, capture_output=not args.verbose, text=True)
        if not report.is_file():
            print(output.stdout or "", output.stderr or "", sep="\n")
            return 2
        counts = tally(report, present)

        width = max(len(n) for n in present)
        print(f"{'file':<{width}}  tests  passed  failed  errors  skipped")
        grand = {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0}
        for name in present:
            c = counts[name]
            ran = c["passed"] + c["failed"] + c["errors"] + c["skipped"]
            # A module that does not import yields one collection error, not one per test.
            if ran < totals[name]:
                c["errors"] += totals[name] - ran
            row = {"tests": totals[name], **c}
            for key in grand:
                grand[key] += row[key]
            print(
                f"{name:<{width}}  {row['tests']:>5}  {row['passed']:>6}  {row['failed']:>6}"
                f"  {row['errors']:>6}  {row['skipped']:>7}"
            )
        print(
            f"{'total':<{width}}  {grand['tests']:>5}  {grand['passed']:>6}  {grand['failed']:>6}"
            f"  {grand['errors']:>6}  {grand['skipped']:>7}"
        )
        if args.keep:
            print(f"kept: {work}")
        return 0 if grand["passed"] == grand["tests"] else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
