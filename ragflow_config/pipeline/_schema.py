"""JSON Schemas generated from the registered types' Pydantic models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._registry import KINDS, ComponentType, Kind, Registry
from ._spec import COMPONENT_BLOCKS, MiddlewareSpec, PipelineSpec

DIALECT = "https://json-schema.org/draft/2020-12/schema"
# An absolute identifier, as JSON Schema asks of a root schema; editors still load the file
# through the relative path a pipeline names (`$schema=../schemas/pipeline.schema.json`),
# and every $ref in it is a fragment, which resolves within the file whatever its address.
SCHEMA_BASE = "https://ragflow-config.dev/schemas/"
PIPELINE_SCHEMA_FILE = "pipeline.schema.json"
TYPES_FOLDER = "types"
# Marks a component block's $def (and its `type` property) with the block's kind, so
# validate can word the block's errors itself.
KIND_MARKER = "x-ragflow-kind"
EXTENSION_PREFIX = "x-"


def parameters_ref(component: ComponentType) -> str:
    return f"{component.kind}.{component.name}"


# An editor checks a file's text as written, before `${VAR}` is expanded, so in the
# schemas written for editors a value a reference would break (a number, a pattern,
# an enum) also takes a string holding one: `dimensions: ${DIMENSIONS:-256}`.
# validate checks the expanded values against the strict schema.
_REFERENCE = {
    "type": "string",
    "pattern": r"\$\{",
    "description": "A ${VAR} or ${VAR:-default} reference, expanded when the file is read.",
}
_ANNOTATIONS = ("title", "description", "default", "examples", "deprecated")
_SCALAR_TYPES = ("integer", "number", "boolean")
_SCALAR_RULES = ("pattern", "enum", "const", "format")


def _or_reference(schema: Any) -> None:
    """In place: every constrained scalar in ``schema`` also takes a ``${VAR}`` string."""
    if isinstance(schema, list):
        for item in schema:
            _or_reference(item)
        return
    if not isinstance(schema, dict):
        return
    for value in schema.values():
        _or_reference(value)
    if schema.get("type") in _SCALAR_TYPES or any(rule in schema for rule in _SCALAR_RULES):
        # if/else, not anyOf: a wrong value gets the rule's own message ("'many' is not
        # of type 'integer'"), where anyOf would let validators pick the string branch's.
        rules = {key: schema.pop(key) for key in list(schema) if key not in _ANNOTATIONS}
        schema["if"], schema["else"] = _REFERENCE, rules


def _parameters_schema(
    component: ComponentType, prefix: str, *, as_written: bool
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parameters model's schema with its own $defs renamed under ``prefix``."""
    schema = component.parameters_model.model_json_schema(ref_template=f"#/$defs/{prefix}{{model}}")
    if as_written:
        _or_reference(schema)
    nested = {f"{prefix}{name}": value for name, value in schema.pop("$defs", {}).items()}
    schema.setdefault("description", component.description)
    if schema.get("title") == component.parameters_model.__name__:
        # Editors name the schema a message comes from by its title: "Parameters" for all.
        schema["title"] = f"{component.name} {component.kind} parameters"
    return schema, nested


def _selected_by_type(block: dict[str, Any], kind: Kind, components: list[ComponentType]) -> None:
    """Make ``type`` an enum of the registered names, and each name select its parameters.

    Not a `oneOf` of one branch per type: a block that matches no branch gets one
    message from a validator, "not valid under any of the given schemas", which names
    neither the misspelt type nor the parameter. An enum names the valid types, and an
    `if`/`then` per type applies only that type's parameters, so an unknown parameter
    is named as such.
    """
    block[KIND_MARKER] = kind
    names = [component.name for component in components]
    described = block["properties"]["type"].get("description", "A registered type name.")
    block["properties"]["type"] = (
        {KIND_MARKER: kind, "description": described, "enum": names}
        if names
        else {KIND_MARKER: kind, "description": f"No {kind} type is registered.", "not": {}}
    )
    block["properties"]["parameters"]["description"] = "The parameters of the type named by `type`."
    if components:
        block["allOf"] = [
            {
                "if": {"properties": {"type": {"const": component.name}}, "required": ["type"]},
                "then": {
                    "description": component.description,
                    "properties": {"parameters": {"$ref": f"#/$defs/{parameters_ref(component)}"}},
                },
            }
            for component in components
        ]


def pipeline_schema(registry: Registry, *, as_written: bool = False) -> dict[str, Any]:
    """The schema of a pipeline file, with every registered type in it.

    ``as_written``: the schema for editors, whose parameters also take ``${VAR}``
    references; without it, the schema of the values once expanded, which validate uses.
    """
    schema = PipelineSpec.model_json_schema(ref_template="#/$defs/{model}")
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    blocks: dict[str, Kind] = dict(COMPONENT_BLOCKS)
    blocks[MiddlewareSpec.__name__] = "middleware"
    for def_name, kind in blocks.items():
        _selected_by_type(defs[def_name], kind, registry.types(kind))
    for kind in KINDS:
        for component in registry.types(kind):
            ref = parameters_ref(component)
            parameters, nested = _parameters_schema(component, f"{ref}.", as_written=as_written)
            defs[ref] = parameters
            defs.update(nested)
    # Top-level `x-...` keys are free, as in Compose files: a place for YAML anchors.
    schema["patternProperties"] = {
        f"^{EXTENSION_PREFIX}": {"description": "Ignored: a place for YAML anchors to reuse."}
    }
    return {"$schema": DIALECT, "$id": SCHEMA_BASE + PIPELINE_SCHEMA_FILE, **schema}


def type_schema(component: ComponentType) -> dict[str, Any]:
    """A standalone schema of one type's parameters, for editors."""
    parameters, nested = _parameters_schema(component, "", as_written=True)
    if nested:
        parameters["$defs"] = nested
    return {
        "$schema": DIALECT,
        "$id": f"{SCHEMA_BASE}{TYPES_FOLDER}/{parameters_ref(component)}.schema.json",
        **parameters,
    }


def render_schemas(registry: Registry) -> dict[str, str]:
    """Every schema file, by path relative to the schemas folder, as its exact text."""
    files = {PIPELINE_SCHEMA_FILE: pipeline_schema(registry, as_written=True)}
    for kind in KINDS:
        for component in registry.types(kind):
            files[f"{TYPES_FOLDER}/{parameters_ref(component)}.schema.json"] = type_schema(
                component
            )
    return {
        path: json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
        for path, schema in files.items()
    }


def write_schemas(registry: Registry, folder: Path) -> list[str]:
    """Write every schema into ``folder``, removing stale type schemas; return the paths written."""
    rendered = render_schemas(registry)
    for stale in set(_existing(folder)) - set(rendered):
        (folder / stale).unlink()
    for path, text in rendered.items():
        target = folder / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return sorted(rendered)


def stale_schemas(registry: Registry, folder: Path) -> list[str]:
    """Schema files that differ from what the registry generates (missing, changed or extra)."""
    rendered = render_schemas(registry)
    existing = _existing(folder)
    problems = [f"{p}: missing" for p in sorted(set(rendered) - set(existing))]
    problems += [f"{p}: no longer generated" for p in sorted(set(existing) - set(rendered))]
    problems += [
        f"{p}: out of date"
        for p in sorted(set(rendered) & set(existing))
        if (folder / p).read_text(encoding="utf-8") != rendered[p]
    ]
    return problems


def _existing(folder: Path) -> list[str]:
    if not folder.is_dir():
        return []
    return [p.relative_to(folder).as_posix() for p in folder.rglob("*.schema.json")]
