"""action.yml itself, which actionlint does not read (it lints workflows): a composite
action whose steps are wired to inputs, step outputs and scripts that exist."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from .conftest import ACTION, ROOT

EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.S)


def _load(path: Path) -> Any:
    return YAML(typ="safe", pure=True).load(path.read_text(encoding="utf-8"))


ACTION_YML = _load(ROOT / "action.yml")
STEPS: list[dict[str, Any]] = ACTION_YML["runs"]["steps"]


def _expressions(node: Any) -> list[str]:
    """The expressions in ``node``: ``${{ ... }}`` anywhere, and every ``if:`` whole."""
    if isinstance(node, dict):
        found = [e for key, value in node.items() if key != "if" for e in _expressions(value)]
        return found + ([str(node["if"])] if "if" in node else [])
    if isinstance(node, list):
        return [e for value in node for e in _expressions(value)]
    return [m.strip() for m in EXPRESSION.findall(node)] if isinstance(node, str) else []


def test_it_is_a_composite_action_with_described_inputs_and_outputs():
    assert ACTION_YML["runs"]["using"] == "composite"
    assert {"name", "description", "inputs", "outputs", "runs"} <= set(ACTION_YML)
    for name, spec in ACTION_YML["inputs"].items():
        assert spec.get("description"), name
        assert spec.get("required") or "default" in spec, name
    for name, spec in ACTION_YML["outputs"].items():
        assert spec.get("description") and spec.get("value"), name
    assert {"files", "command", "python-version", "extras", "base-ref", "token"} <= set(
        ACTION_YML["inputs"]
    )
    assert ACTION_YML["inputs"]["token"]["default"] == "${{ github.token }}"


def test_every_step_is_either_run_with_a_shell_or_uses_a_versioned_action():
    for step in STEPS:
        assert step.get("name"), step
        assert ("run" in step) != ("uses" in step), step["name"]
        if "run" in step:
            assert step.get("shell") == "bash", step["name"]
        else:
            assert re.fullmatch(r"[\w-]+/[\w-]+@v\d+", step["uses"]), step["uses"]


def test_inputs_and_step_outputs_referenced_exist_and_every_input_is_used():
    inputs = set(ACTION_YML["inputs"])
    ids = [step.get("id") for step in STEPS]
    referenced: set[str] = set()
    for position, step in enumerate(STEPS):
        for expression in _expressions(step):
            for name in re.findall(r"\binputs\.([\w-]+)", expression):
                assert name in inputs, f"{step['name']}: inputs.{name}"
                referenced.add(name)
            for step_id in re.findall(r"\bsteps\.([\w-]+)\.", expression):
                # A step reads the outputs of steps before it only.
                assert step_id in ids[:position], f"{step['name']}: steps.{step_id}"
    for expression in _expressions(ACTION_YML["outputs"]):
        for step_id in re.findall(r"\bsteps\.([\w-]+)\.", expression):
            assert step_id in ids, f"outputs: steps.{step_id}"
    assert referenced == inputs, f"inputs never used: {sorted(inputs - referenced)}"


def test_no_expression_is_spliced_into_a_script():
    # Inputs reach the scripts through env: an expression inside `run:` would be pasted
    # into the shell script before it runs (script injection from a file name or a ref).
    for step in STEPS:
        if "run" in step:
            assert "${{" not in step["run"], step["name"]


def test_the_scripts_the_steps_run_exist_and_the_shell_parses():
    for step in STEPS:
        if "run" not in step:
            continue
        for script in re.findall(r"\$GITHUB_ACTION_PATH/action/([\w.]+)", step["run"]):
            assert (ACTION / script).is_file(), script
        syntax = subprocess.run(["bash", "-n"], input=step["run"], capture_output=True, text=True)
        assert syntax.returncode == 0, f"{step['name']}: {syntax.stderr}"


def test_the_job_fails_after_the_summary_and_the_comment():
    names = [step.get("id") or step["name"] for step in STEPS]
    report, comment = names.index("report"), names.index("comment")
    summary = names.index("Write the job summary")
    fail = names.index("Fail when a command failed")
    assert report < summary < fail and report < comment < fail == len(STEPS) - 1
    assert STEPS[fail]["if"] == "steps.report.outputs.exit-code != '0'"
    assert 'exit "$EXIT_CODE"' in STEPS[fail]["run"]
    # The cache is restored before the commands run (and saved by actions/cache at the end).
    cache = next(
        i for i, step in enumerate(STEPS) if step.get("uses", "").startswith("actions/cache@")
    )
    assert cache < report


@pytest.mark.parametrize(
    "workflow",
    sorted((ROOT / "docs" / "examples" / "workflows").glob("*.yml")),
    ids=lambda p: p.name,
)
def test_the_example_workflows_pass_only_inputs_the_action_has(workflow: Path):
    # actionlint checks the inputs of actions it knows; this one it does not.
    data = _load(workflow)
    uses = [
        step
        for job in data["jobs"].values()
        for step in job["steps"]
        if step.get("uses", "").split("@")[0].endswith("/ragflow-config")
    ]
    assert uses, "the example uses the action"
    for step in uses:
        assert set(step.get("with", {})) <= set(ACTION_YML["inputs"])
        assert "files" in step["with"]
        for command in re.split(r"[\s,]+", step["with"].get("command", "")):
            assert command in {"validate", "plan", "eval", "run", ""}


@pytest.mark.parametrize(
    "workflow",
    sorted((ROOT / "docs" / "examples" / "workflows").glob("*.yml")),
    ids=lambda p: p.name,
)
def test_the_docs_show_the_example_workflows_as_they_are(workflow: Path):
    text = workflow.read_text(encoding="utf-8")
    lines = text.splitlines()
    while lines and lines[0].startswith("#"):  # the file's leading comment is the doc's prose
        lines.pop(0)
    body = "\n".join(lines).strip()
    assert f"```yaml\n{body}\n```" in (ROOT / "docs" / "github-action.md").read_text(
        encoding="utf-8"
    )
