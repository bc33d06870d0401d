"""The component reference the site's build hook writes lists every registered type and
every parameter, with its type, default and description, as `types --json` has them."""

from __future__ import annotations

import importlib.util
import json
from types import ModuleType

from ragflow_config.cli import main

from ._pages import DOCS


def _hook() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "reference_hook", DOCS / "_hooks" / "reference.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _types_json(capsys) -> dict:  # type: ignore[no-untyped-def]
    assert main(["types", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    return printed.get("types", printed)  # an envelope, if the command has one


def test_every_type_and_parameter_is_on_the_page(capsys) -> None:  # type: ignore[no-untyped-def]
    hook = _hook()
    page = hook.reference_markdown()
    rows = {line for line in page.splitlines() if line.startswith("| `")}
    kinds = _types_json(capsys)
    assert kinds and all(kinds.values())
    for kind, types in kinds.items():
        assert f"\n## {kind}\n" in page
        for name, described in types.items():
            assert f"### {kind}: `{name}` {{#{kind}-{name}}}" in page
            schema = described["parameters"]
            for parameter, spec in schema.get("properties", {}).items():
                default = (
                    "required"
                    if parameter in schema.get("required", [])
                    else f"`{json.dumps(spec.get('default'))}`"
                )
                row = (
                    f"| `{parameter}` | {hook._cell(hook.schema_type(spec))} | {hook._cell(default)} "
                    f"| {hook._cell(spec.get('description', ''))} |"
                )
                assert row in rows, f"{kind} {name}: no row {row}"


def test_types_read_as_words() -> None:
    schema_type = _hook().schema_type
    assert schema_type({"type": "integer", "minimum": 1, "maximum": 50}) == "integer, >= 1, <= 50"
    assert schema_type({"enum": ["dense", "hybrid"], "type": "string"}) == '`"dense"` | `"hybrid"`'
    assert (
        schema_type({"anyOf": [{"type": "string"}, {"type": "null"}], "x-ragflow-path": True})
        == "string or null, relative to the pipeline file"
    )
    assert schema_type({"type": "array", "items": {"type": "string"}, "minItems": 1}) == (
        "list of string, at least 1 items"
    )
