"""The action's eval writes its HTML report where the upload step takes it from."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path

from _git_repository import repository
from ruamel.yaml import YAML

from .conftest import ROOT, run_script


def test_report_py_has_eval_write_its_html_into_the_folder_the_action_uploads(
    tmp_path: Path, github_env: dict[str, str]
) -> None:
    repo = repository(tmp_path)
    env = {
        **github_env,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
    }
    folder = tmp_path / "runner-temp" / "ragflow-config" / "eval-html"
    out = tmp_path / "report.md"
    done = run_script(
        "report.py",
        *("--commands", "eval", "--base", "main", "--out", str(out)),
        *("--html-dir", str(folder), "--", "pipeline.yaml"),
        env=env,
        cwd=repo,
    )
    assert done.returncode == 0, done.stderr
    assert "✅ 1 command(s) succeeded" in out.read_text(encoding="utf-8")
    [html] = folder.iterdir()
    assert html.name == "1-pipeline.html"
    report = html.read_text(encoding="utf-8")
    chart = re.search(r'<svg [^>]*class="chart per-query".*?</svg>', report, re.DOTALL)
    assert chart and chart.group(0).count('<rect class="bar ') == 6  # one per judged query


def test_the_action_uploads_that_folder_when_eval_runs() -> None:
    steps = YAML(typ="safe", pure=True).load((ROOT / "action.yml").read_text())["runs"]["steps"]
    report = next(step for step in steps if step.get("id") == "report")
    assert '--html-dir "$RUNNER_TEMP/ragflow-config/eval-html"' in report["run"]
    upload = next(step for step in steps if step.get("uses", "").startswith("actions/upload-"))
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == "${{ runner.temp }}/ragflow-config/eval-html"
    assert upload["with"]["if-no-files-found"] == "ignore"  # no eval, no report: no failure
    assert "contains(inputs.command, 'eval')" in upload["if"]
    assert steps.index(report) < steps.index(upload) < len(steps) - 1  # before the job fails
