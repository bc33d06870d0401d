"""`types`: every registered type by kind, with its parameters and their defaults.

Run through `main` in this process (not a subprocess) so that mutation testing
sees it (issue 27, item 4).
"""

from __future__ import annotations

import json

import pytest

from ragflow_config.cli import main
from ragflow_config.pipeline import default_registry

from .test_kb_commands import output_of

KINDS = [
    "parser",
    "chunker",
    "embedding",
    "vector_store",
    "chat_model",
    "middleware",
    "executor",
    "reranker",
    "source",
]


def test_types_lists_each_kind_its_types_and_their_parameters(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["types"]) == 0
    out, err = output_of(capsys)
    assert err == ""
    lines = out.splitlines()
    assert [line for line in lines if not line.startswith(" ")] == [f"{k}:" for k in KINDS]

    registry = default_registry()
    markdown = next(t for t in registry.types("parser") if t.name == "markdown")
    at = lines.index(f"  markdown           {markdown.description}")
    assert lines[at + 1] == "      encoding = 'utf-8'  Text encoding of the files."
    # A required parameter shows no default; a default from a factory shows its value.
    assert "      model  The model's name on the server." in lines
    assert (
        "      separators = ['\\n\\n', '\\n', '. ', '! ', '? ', '; ', ', ', ' ']  Where to cut, "
        "strongest first; a piece no separator splits is cut between characters."
    ) in lines
    assert not any(line != line.rstrip() for line in lines)


def test_types_json_gives_each_type_its_class_distribution_and_parameter_schema(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["types", "--json"]) == 0
    types = json.loads(output_of(capsys)[0])
    assert list(types) == KINDS
    markdown = types["parser"]["markdown"]
    assert markdown["class"] == "ragflow_config.rag._parsers.markdown.MarkdownParser"
    assert markdown["distribution"] == "ragflow-config"
    assert markdown["parameters"]["properties"]["encoding"]["default"] == "utf-8"
    assert markdown["parameters"]["additionalProperties"] is False
    assert "minilm" in types["embedding"]
