"""JSON Schemas generated from the registered types' Pydantic models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ._registry import KINDS, ComponentType, Registry
from ._spec import COMPONENT_BLOCKS, MiddlewareSpec, PipelineSpec

DIALECT = "https://json-schema.org/draft/2020-12/schema"
PIPELINE_SCHEMA_FILE = "pipeline.schema.json"
TYPES_FOLDER = "types"
# Marks a $def whose oneOf is discriminated by `type`, so errors can name the right branch.
KIND_MARKER = "x-ragflow-kind"
EXTENSION_PREFIX = "x-"


def parameters_ref(component: ComponentType) -> str:
    return f"{component.kind}.{component.name}"


def _parameters_schema(
    component: ComponentType, prefix: str
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The parameters model's schema with its own $defs renamed under ``prefix``."""
    schema = component.parameters_model.model_json_schema(ref_template=f"#/$defs/{prefix}{{model}}")
    nested = {f"{prefix}{name}": value for name, value in schema.pop("$defs", {}).items()}
    schema.setdefault("description", component.description)
    return schema, nested


def _branch(
    component: ComponentType,
    extra_properties: dict[str, Any] | None = None,
    extra_required: tuple[str, ...] = (),
) -> dict[str, Any]:
    properties: dict[str, Any] = {
        "type": {"const": component.name, "description": "A registered type name."},
        **(extra_properties or {}),
        "parameters": {"$ref": f"#/$defs/{parameters_ref(component)}"},
    }
    return {
        "type": "object",
        "title": component.name,
        "description": component.description,
        "properties": properties,
        "required": ["type", *extra_required],
        "additionalProperties": False,
    }


def _one_of(kind: str, description: str, branches: list[dict[str, Any]]) -> dict[str, Any]:
    schema: dict[str, Any] = {KIND_MARKER: kind, "description": description}
    schema["oneOf"] = branches or [{"not": {}, "description": f"no {kind} type is registered"}]
    return schema


def pipeline_schema(registry: Registry) -> dict[str, Any]:
    """The schema of a pipeline file, with every registered type in it."""
    schema = PipelineSpec.model_json_schema(ref_template="#/$defs/{model}")
    defs: dict[str, Any] = schema.setdefault("$defs", {})
    for def_name, block in COMPONENT_BLOCKS.items():
        defs[def_name] = _one_of(
            block.kind,
            (block.__doc__ or "").strip(),
            [_branch(component) for component in registry.types(block.kind)],
        )
    middleware = defs[MiddlewareSpec.__name__]
    extra = {k: v for k, v in middleware["properties"].items() if k not in ("type", "parameters")}
    required = tuple(k for k in middleware.get("required", []) if k in extra)
    defs[MiddlewareSpec.__name__] = _one_of(
        "middleware",
        (MiddlewareSpec.__doc__ or "").strip(),
        [_branch(component, extra, required) for component in registry.types("middleware")],
    )
    for kind in KINDS:
        for component in registry.types(kind):
            ref = parameters_ref(component)
            parameters, nested = _parameters_schema(component, f"{ref}.")
            defs[ref] = parameters
            defs.update(nested)
    # Top-level `x-...` keys are free, as in Compose files: a place for YAML anchors.
    schema["patternProperties"] = {
        f"^{EXTENSION_PREFIX}": {"description": "Ignored: a place for YAML anchors to reuse."}
    }
    return {"$schema": DIALECT, "$id": PIPELINE_SCHEMA_FILE, **schema}


def type_schema(component: ComponentType) -> dict[str, Any]:
    """A standalone schema of one type's parameters."""
    parameters, nested = _parameters_schema(component, "")
    if nested:
        parameters["$defs"] = nested
    return {
        "$schema": DIALECT,
        "$id": f"{TYPES_FOLDER}/{parameters_ref(component)}.schema.json",
        **parameters,
    }


def render_schemas(registry: Registry) -> dict[str, str]:
    """Every schema file, by path relative to the schemas folder, as its exact text."""
    files = {PIPELINE_SCHEMA_FILE: pipeline_schema(registry)}
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
