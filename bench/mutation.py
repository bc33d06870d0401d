"""mutmut on one target at a time, with only the tests that reach it.

    python bench/mutation.py TARGET [--work /tmp/ragflow-mutation] [--max-children 1] [NAME ...]
    python bench/mutation.py TARGET --results        # what survived (mutmut results)

mutmut reads its settings from ``[tool.mutmut]`` of the ``pyproject.toml`` in its
working directory, and runs every test of its selection once (with coverage, to
learn which tests reach which function) before the first mutant. A target here is
a table ``[tool.mutmut-targets.TARGET]`` of ``pyproject.toml``: the keys it names
replace ``[tool.mutmut]``'s, so a target mutates only its modules and collects
only its tests. This script copies the package, ``tests/`` and mutmut's
``also_copy`` files into ``WORK/TARGET`` (the worktree is never touched), writes
the merged settings there as ``[tool.mutmut]``, and runs ``mutmut run`` in that
copy. Re-running refreshes the copy: mutmut keeps the verdicts of the functions
whose source did not change, and ``NAME ...`` (globs of mutant names, such as
``"ragflow_config.server._auth.*"``) reruns only those.

Figures and every survivor's verdict: ``bench/mutation.md``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # the dev extra installs tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
_IGNORED = shutil.ignore_patterns("__pycache__", "*.pyc", ".hypothesis", ".pytest_cache")


def settings(target: str) -> dict[str, Any]:
    """``[tool.mutmut]`` with the target's keys in place of its own."""
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]
    targets = tool.get("mutmut-targets", {})
    if target not in targets:
        raise SystemExit(f"unknown target {target!r}; pyproject.toml names {', '.join(targets)}")
    return {**tool["mutmut"], **targets[target]}


def toml_table(name: str, values: dict[str, Any]) -> str:
    """``values`` (strings, numbers, booleans and lists of strings) as a TOML table."""
    lines = [f"[{name}]"]
    for key, value in values.items():
        if isinstance(value, list):
            items = "".join(f"    {_toml_string(item)},\n" for item in value)
            lines.append(f"{key} = [\n{items}]")
        elif isinstance(value, str):
            lines.append(f"{key} = {_toml_string(value)}")
        else:
            lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else value}")
    return "\n".join(lines) + "\n"


def _toml_string(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def prepare(target: str, work: Path) -> Path:
    """``work/target``: a copy of the tree mutmut can mutate, with the target's settings."""
    config = settings(target)
    copy = work / target
    copy.mkdir(parents=True, exist_ok=True)
    for name in ["ragflow_config", "tests", *config.get("also_copy", [])]:
        source = ROOT / name.rstrip("/")
        destination = copy / name.rstrip("/")
        if source.is_dir():
            shutil.copytree(source, destination, ignore=_IGNORED, dirs_exist_ok=True)
        else:
            shutil.copy2(source, destination)
    # The project's own settings (pytest's, above all), then the target's mutmut table.
    project = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    kept = project.split("\n[tool.mutmut]\n", 1)[0]
    (copy / "pyproject.toml").write_text(
        f"{kept}\n{toml_table('tool.mutmut', config)}", encoding="utf-8"
    )
    return copy


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("target", help="a table of [tool.mutmut-targets] in pyproject.toml")
    parser.add_argument("names", nargs="*", help="mutant names or globs to run (default: all)")
    parser.add_argument("--work", type=Path, default=Path("/tmp/ragflow-mutation"))
    parser.add_argument("--max-children", type=int, default=1)
    parser.add_argument("--results", action="store_true", help="list the survivors only")
    args = parser.parse_intermixed_args(argv)
    copy = prepare(args.target, args.work)
    mutmut = [sys.executable, "-m", "mutmut"]
    if args.results:
        command = [*mutmut, "results"]
    else:
        command = [*mutmut, "run", "--max-children", str(args.max_children), *args.names]
    print(f"in {copy}: {' '.join(command[1:])}", file=sys.stderr)
    return subprocess.run(command, cwd=copy, env=os.environ.copy(), check=False).returncode


if __name__ == "__main__":
    raise SystemExit(main())
