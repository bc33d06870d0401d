"""A third-party package registers a parser through entry points, with no edit to core files.

The package is a real distribution on ``sys.path``: a module and a ``.dist-info``
folder with ``METADATA`` and ``entry_points.txt``, which is what pip installs.
"""

from __future__ import annotations

import importlib
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragflow_config.pipeline import Pipeline, Registry
from ragflow_config.pipeline._schema import render_schemas
from ragflow_config.pipeline._validate import check_file

from .conftest import FILES

DEMO_MODULE = '''
"""A demo parser: sections separated by a marker line."""

from typing import ClassVar

from pydantic import Field

from ragflow_config.message import TextBlock
from ragflow_config.rag import ParserBase, Section
from ragflow_config._component import ComponentParameters


class DemoParser(ParserBase):
    """Demo files: sections separated by a marker line."""

    supported_media_types: ClassVar[list[str]] = ["text/x-demo"]

    class Parameters(ComponentParameters):
        separator: str = Field(default="---", min_length=1, description="The marker line.")
        max_sections: int = Field(default=10, ge=1, description="Sections kept per file.")

    parameters: Parameters

    async def parse(self, file, filename):
        text = self.read_bytes(file, filename).decode("utf-8")
        parts = [p.strip() for p in text.split(self.parameters.separator) if p.strip()]
        return [
            Section(content=TextBlock(text=part), source=filename, metadata={"part": index})
            for index, part in enumerate(parts[: self.parameters.max_sections])
        ]
'''


def write_distribution(folder: Path, name: str, module: str, source: str, entry: str) -> None:
    """Lay out an installed distribution: its module and its `.dist-info` metadata."""
    (folder / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
    info = folder / f"{module}-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 0.1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(f"[ragflow_config.parsers]\n{entry}\n", encoding="utf-8")


@pytest.fixture
def plugin_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    folder = tmp_path / "site"
    folder.mkdir()
    write_distribution(
        folder,
        "ragflow-demo-plugin",
        "ragflow_demo_plugin",
        DEMO_MODULE,
        "demo = ragflow_demo_plugin:DemoParser",
    )
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    yield folder
    for module in ("ragflow_demo_plugin", "ragflow_broken_plugin"):
        sys.modules.pop(module, None)


def test_the_plugin_is_registered_with_its_distribution(plugin_path: Path) -> None:
    registry = Registry.from_entry_points()
    demo = registry.get("parser", "demo")
    assert demo.distribution == "ragflow-demo-plugin"
    assert demo.cls.__module__ == "ragflow_demo_plugin"
    assert demo.description == "Demo files: sections separated by a marker line."
    assert "text" in registry.names("parser")  # the built-ins are still there


def test_its_parameters_appear_in_the_generated_schemas(plugin_path: Path) -> None:
    rendered = render_schemas(Registry.from_entry_points())
    standalone = json.loads(rendered["types/parser.demo.schema.json"])
    max_sections = standalone["properties"]["max_sections"]
    assert max_sections["description"] == "Sections kept per file."
    assert max_sections["default"] == 10
    assert max_sections["else"] == {"minimum": 1, "type": "integer"}
    pipeline = json.loads(rendered["pipeline.schema.json"])
    parser_block = pipeline["$defs"]["ParserBlock"]
    assert "demo" in parser_block["properties"]["type"]["enum"]
    assert {
        "if": {"properties": {"type": {"const": "demo"}}, "required": ["type"]},
        "then": {
            "description": "Demo files: sections separated by a marker line.",
            "properties": {"parameters": {"$ref": "#/$defs/parser.demo"}},
        },
    } in parser_block["allOf"]


async def test_a_pipeline_using_it_validates_and_builds_it(
    plugin_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(FILES)
    registry = Registry.from_entry_points()
    pipeline = Pipeline.load("plugin_demo.yaml", registry)
    async with pipeline.build() as built:
        parser = built.indexing["notes"].parsers[0]
        sections = await parser.parse(b"one\n===\ntwo\n===\nthree\n===\nfour", "a.demo")
    assert type(parser).__name__ == "DemoParser"
    assert [s.content.text for s in sections] == ["one", "two", "three"]  # max_sections: 3


def test_a_bad_parameter_of_the_plugin_is_reported_at_its_line(
    plugin_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(FILES)
    _, issues = check_file("plugin_demo_bad.yaml", Registry.from_entry_points())
    assert [str(issue) for issue in issues] == [
        "plugin_demo_bad.yaml:13:11: knowledge_bases[0].parsers[0].parameters.colour: "
        "unknown key 'colour'; expected one of: max_sections, separator",
        "plugin_demo_bad.yaml:14:25: knowledge_bases[0].parsers[0].parameters.max_sections: "
        "0 is less than the minimum of 1",
    ]


def test_without_the_plugin_the_type_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FILES)
    _, issues = check_file("plugin_demo.yaml", Registry.from_entry_points())
    [issue] = [str(issue) for issue in issues]
    assert issue.startswith(
        "plugin_demo.yaml:10:15: knowledge_bases[0].parsers[0].type: unknown parser type 'demo'"
    )


@pytest.mark.parametrize(
    ("source", "entry", "warning"),
    [
        pytest.param(
            'raise RuntimeError("this plugin is broken")\n',
            "broken = ragflow_broken_plugin:Nothing",
            "skipping parser type 'broken' from ragflow_broken_plugin:Nothing: "
            "RuntimeError: this plugin is broken",
            id="raises-on-import",
        ),
        pytest.param(
            "def parse(data):\n    return data\n",
            "broken = ragflow_broken_plugin:parse",
            "skipping parser type 'broken' from ragflow_broken_plugin:parse: TypeError: "
            "parser type 'broken': <function parse at ",
            id="not-a-component",
        ),
        pytest.param(
            "from ragflow_demo_plugin import DemoParser\n",
            "text = ragflow_broken_plugin:DemoParser",
            "skipping parser type 'text' from ragflow_broken_plugin:DemoParser: ValueError: "
            "parser type 'text' is registered twice: by ragflow-config "
            "(ragflow_config.rag._parsers.text) and by ragflow-broken-plugin (ragflow_demo_plugin)",
            id="takes-a-built-in-name",
        ),
    ],
)
def test_a_broken_plugin_is_skipped_with_a_warning(
    plugin_path: Path, caplog: pytest.LogCaptureFixture, source: str, entry: str, warning: str
) -> None:
    write_distribution(plugin_path, "ragflow-broken-plugin", "ragflow_broken_plugin", source, entry)
    importlib.invalidate_caches()
    with caplog.at_level(logging.WARNING, logger="ragflow_config.registry"):
        registry = Registry.from_entry_points()
    assert "broken" not in registry.names("parser")
    assert registry.get("parser", "text").cls.__name__ == "TextParser"  # the built-in stays
    assert registry.get("parser", "demo").distribution == "ragflow-demo-plugin"
    assert any(message.startswith(warning) for message in caplog.messages), caplog.messages


def test_other_distributions_are_read_when_a_name_is_not_built_in_or_a_kind_is_listed(
    plugin_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A file of built-in types (validate in a pre-commit hook) reads this project's entry
    points alone; listing a kind reads every distribution's, so a plugin reusing a built-in
    name is still reported, and the built-in still wins."""
    write_distribution(
        plugin_path,
        "ragflow-broken-plugin",
        "ragflow_broken_plugin",
        "from ragflow_demo_plugin import DemoParser\n",
        "text = ragflow_broken_plugin:DemoParser",
    )
    importlib.invalidate_caches()
    with caplog.at_level(logging.WARNING, logger="ragflow_config.registry"):
        registry = Registry.from_entry_points()
        assert registry.get("parser", "text").cls.__name__ == "TextParser"
        assert registry.has("vector_store", "qdrant")
        assert "ragflow_broken_plugin" not in sys.modules
        assert caplog.messages == []
        assert "demo" in registry.names("parser")
    assert registry.get("parser", "text").cls.__name__ == "TextParser"
    assert any("parser type 'text' is registered twice" in m for m in caplog.messages)


def test_the_installed_cli_lists_it_and_writes_its_schema(
    plugin_path: Path, tmp_path: Path
) -> None:
    script = shutil.which("ragflow-config", path=os.path.dirname(sys.executable))
    assert script, "the ragflow-config console script is not installed next to this Python"
    environment = {**os.environ, "PYTHONPATH": str(plugin_path)}
    listing = subprocess.run(
        [script, "types"], capture_output=True, text=True, env=environment, timeout=120, check=True
    )
    lines = listing.stdout.splitlines()
    row = lines.index("  demo               Demo files: sections separated by a marker line.")
    assert lines.index("parser:") < row < lines.index("chunker:")
    assert lines[row + 1 : row + 3] == [
        "      separator = '---'  The marker line.",
        "      max_sections = 10  Sections kept per file.",
    ]
    out = tmp_path / "schemas"
    subprocess.run(
        [script, "schema", "--out", str(out)],
        capture_output=True,
        text=True,
        env=environment,
        timeout=120,
        check=True,
    )
    written = json.loads((out / "types" / "parser.demo.schema.json").read_text())
    assert written["properties"]["separator"]["default"] == "---"
