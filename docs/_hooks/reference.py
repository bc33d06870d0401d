"""MkDocs hook: writes reference.md, every registered component, at build time.

It reads what `ragflow-config types --json` prints: the registry's types and each
one's `Parameters` model as JSON Schema, so the page cannot fall behind the code.
It is never a file in the repository; `mkdocs build` makes it afresh each time.
"""

from __future__ import annotations

import json
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from ragflow_config.pipeline import default_registry
from ragflow_config.pipeline._registry import KINDS, ComponentType

PAGE = "reference.md"

# Where each kind goes in a pipeline file, in the words of the file itself.
_WHERE = {
    "parser": "a knowledge base's `parsers:` list, tried in order",
    "chunker": "a knowledge base's `chunker:`",
    "embedding": "`embeddings:`, by name, or inline as a knowledge base's `embedding:`",
    "vector_store": "`vector_stores:`, by name, or inline as a knowledge base's `vector_store:`",
    "chat_model": "`chat_models:`, by name: for `chat`, `llm` rerankers and reranking middlewares",
    "middleware": "`middlewares:`",
    "executor": "`execution:`, or `run --executor`",
    "reranker": "`rerankers:`, by name: used by a knowledge base's `retrieval.rerank`",
}

_CONSTRAINTS = {
    "minimum": ">= {}",
    "exclusiveMinimum": "> {}",
    "maximum": "<= {}",
    "exclusiveMaximum": "< {}",
    "minLength": "at least {} characters",
    "maxLength": "at most {} characters",
    "minItems": "at least {} items",
    "pattern": "matches `{}`",
}


def schema_type(schema: dict[str, Any]) -> str:
    """A JSON Schema in a few words: `integer, >= 1`, `"a" | "b"`, `string or null`."""
    if "anyOf" in schema:
        words = " or ".join(schema_type(option) for option in schema["anyOf"])
    elif "const" in schema:
        words = f"`{json.dumps(schema['const'])}`"
    elif "enum" in schema:
        words = " | ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    elif schema.get("type") == "array":
        words = f"list of {schema_type(schema.get('items', {}))}"
    elif schema.get("type") == "string" and schema.get("format") == "path":
        words = "path"
    else:
        words = str(schema.get("type", "any"))
    limits = [form.format(schema[key]) for key, form in _CONSTRAINTS.items() if key in schema]
    if schema.get("x-ragflow-path"):
        limits.append("relative to the pipeline file")
    return ", ".join([words, *limits])


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _type_section(component: ComponentType) -> list[str]:
    schema = component.parameters_model.model_json_schema()
    required = set(schema.get("required", []))
    extras = sorted(set(component.cls.requires.values()))
    lines = [
        f"### {component.kind}: `{component.name}` {{#{_anchor(component)}}}",
        "",
        component.description or "(no description)",
        "",
        f"`{component.cls.__module__}.{component.cls.__qualname__}`"
        + (f" from `{component.distribution}`" if component.distribution else "")
        + (f"; needs the extra {', '.join(f'`{e}`' for e in extras)}" if extras else ""),
        "",
    ]
    properties = schema.get("properties", {})
    if not properties:
        return [*lines, "No parameters.", ""]
    lines += ["| parameter | type | default | description |", "|---|---|---|---|"]
    for name, spec in properties.items():
        default = "required" if name in required else f"`{json.dumps(spec.get('default'))}`"
        lines.append(
            f"| `{name}` | {_cell(schema_type(spec))} | {_cell(default)} "
            f"| {_cell(spec.get('description', ''))} |"
        )
    return [*lines, ""]


def reference_markdown() -> str:
    """The page: every kind, every registered type, every parameter."""
    registry = default_registry()
    lines = [
        "# Component reference",
        "",
        "Every type a pipeline file can name, with its parameters: generated at build time",
        "from the registry, the same source as `ragflow-config types --json` and the JSON",
        "Schemas in `schemas/`, so it lists exactly what the installed package accepts.",
        "A block is `{type: NAME, parameters: {...}}`; a parameter left out takes its",
        "default. Which extra each type needs is also in [Components](components.md).",
        "",
    ]
    for kind in KINDS:
        types = registry.types(kind)
        lines += [f"- **{kind}** (in {_WHERE.get(kind, 'its block')}): "]
        lines[-1] += ", ".join(f"[`{t.name}`](#{_anchor(t)})" for t in types) or "none"
    lines.append("")
    for kind in KINDS:
        lines += [f"## {kind}", "", f"In {_WHERE.get(kind, 'its block')}.", ""]
        for component in registry.types(kind):
            lines += _type_section(component)
    return "\n".join(lines)


def _anchor(component: ComponentType) -> str:
    # Set on the heading (attr_list), so links elsewhere can name it: reference.md#parser-pdf.
    return f"{component.kind}-{component.name}"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    files.append(File.generated(config, PAGE, content=reference_markdown()))
    return files
