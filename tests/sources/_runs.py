"""What the source tests share: a pipeline file around one source block, and the command
line's JSON report of a run or plan."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ragflow_config.cli import main

PIPELINE = """\
version: 1
vector_stores:
  disk: {{type: qdrant, parameters: {{path: store}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: 32}}}}
knowledge_bases:
  - name: docs
    sources:
{source}    embedding: model
    vector_store: disk
    collection: docs
    prune: true
"""


def write_pipeline(folder: Path, source: str) -> Path:
    """``pipeline.yaml`` in ``folder``, its one source the YAML list item ``source``."""
    path = folder / "pipeline.yaml"
    path.write_text(PIPELINE.format(source=source), encoding="utf-8")
    return path


def run(
    path: Path, capsys: pytest.CaptureFixture[str], command: str = "run", *options: str
) -> dict[str, Any]:
    """The command's JSON document, with its exit code under ``exit``."""
    if command == "run":
        options = ("--workers", "0", *options)
    code = main([command, str(path), "--json", *options])
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    document["exit"] = code
    return document


def counts(document: dict[str, Any]) -> dict[str, int]:
    [kb] = document["knowledge_bases"]
    return {action: n for action, n in kb["counts"].items() if n}


def changes(document: dict[str, Any]) -> dict[str, str]:
    """Each changed document's path and action."""
    [kb] = document["knowledge_bases"]
    return {c["path"]: c["action"] for c in kb["changes"] if c["action"] != "unchanged"}
