"""Checking a pipeline file: YAML, then the generated JSON Schema, then parameters and names.

Every problem is reported at once, each with its file, line and column.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel
from pydantic import ValidationError as PydanticValidationError

from .._errors import ConfigError, ConfigIssue, defined, format_path
from .._extras import install_line, missing
from ..sources import allowed_root, has_files, pattern_problem, source_escape
from ._registry import Kind, Registry, UnknownTypeError, default_registry
from ._schema import EXTENSION_PREFIX, KIND_MARKER, pipeline_schema
from ._schema_errors import schema_errors
from ._spec import KnowledgeBaseSpec, PipelineSpec
from ._yaml import JsonPath, Locations, load_yaml

if TYPE_CHECKING:  # imported by schema_errors, for an invalid file only
    from jsonschema import ValidationError

# The sections of named blocks, and the kind of block each holds.
_SECTIONS: dict[str, Kind] = {
    "vector_stores": "vector_store",
    "embeddings": "embedding",
    "chat_models": "chat_model",
    "rerankers": "reranker",
}
_SECRET_WORDS = re.compile(r"(api_?key|password|passwd|secret|token|dsn|uri)$", re.IGNORECASE)


@dataclass
class LoadedPipeline:
    """A pipeline file that passed validation."""

    spec: PipelineSpec
    path: Path
    locations: Locations

    @property
    def folder(self) -> Path:
        return self.path.parent


def display_path(path: Path) -> str:
    """The path as the user will recognise it: relative to the working directory when inside it."""
    try:
        return os.path.relpath(path)
    except ValueError:
        return str(path)


def check_file(
    path: str | Path, registry: Registry | None = None
) -> tuple[LoadedPipeline | None, list[ConfigIssue]]:
    """Validate one pipeline file; return it (when valid) and every issue found, in file order.

    The checks that can run side by side do: a file with a bad parameter, a
    misspelt key and a knowledge base naming an undefined store gets all three.
    """
    registry = registry or default_registry()
    path = Path(path)
    data, locations, issues = load_yaml(path, display_path(path))
    if data is None and issues:  # a syntax error: there is no document to check
        return None, issues
    if not isinstance(data, dict):
        return None, [locations.issue((), _not_a_mapping(data))]
    # The schema of the types this file names, not of every registered one: building
    # it imports only those (an unknown name still fails, against the full registry).
    schema = pipeline_schema(
        registry.only((kind, _mapping(block).get("type")) for _, kind, block in _blocks(data))
    )
    reported = {issue.path for issue in issues}  # e.g. an unset ${VAR}: say it once
    issues += _deduplicate(
        issue
        for error in schema_errors(schema, data)
        for issue in _schema_issues(error, schema, locations, registry)
        if issue.path not in reported
    )
    issues += _parameter_issues(data, locations, registry, checked=issues)
    issues += _reference_issues(data, locations)
    issues += _extra_issues(data, locations, registry)
    issues += _source_issues(data, locations, path.resolve().parent, registry)
    if not issues:
        try:
            spec = PipelineSpec.model_validate(
                {key: value for key, value in data.items() if not key.startswith(EXTENSION_PREFIX)}
            )
        except PydanticValidationError as exc:  # the schema should have said it; say it here
            issues = _pydantic_issues(exc, (), locations)
        else:
            issues = _collection_issues(spec, locations, registry)
            issues += _retrieval_issues(spec, locations, registry)
            if not issues:
                return LoadedPipeline(spec, path.resolve(), locations), []
    return None, sorted(issues, key=lambda issue: (issue.line, issue.column, issue.path))


def _not_a_mapping(data: Any) -> str:
    expected = "expected a mapping with `version` and `knowledge_bases`"
    if data is None:
        return f"the file is empty; {expected}"
    what = "a list" if isinstance(data, list) else f"the scalar {data!r}"
    return f"{expected}, got {what}"


def load_pipeline(path: str | Path, registry: Registry | None = None) -> LoadedPipeline:
    """Validate a pipeline file, raising :class:`ConfigError` with every issue."""
    loaded, issues = check_file(path, registry)
    if loaded is None:
        raise ConfigError(issues)
    return loaded


def _deduplicate(issues: Iterator[ConfigIssue]) -> list[ConfigIssue]:
    seen: set[str] = set()
    unique = []
    for issue in issues:
        if str(issue) not in seen:
            seen.add(str(issue))
            unique.append(issue)
    return unique


def _schema_issues(
    error: ValidationError, root: dict[str, Any], locations: Locations, registry: Registry
) -> Iterator[ConfigIssue]:
    """Turn one jsonschema error into readable issues, descending into the branch that applies."""
    path: JsonPath = tuple(error.absolute_path)
    kind = error.schema.get(KIND_MARKER) if isinstance(error.schema, dict) else None
    message = _component_message(error, kind, registry) if kind is not None else None
    if message is not None:
        yield locations.issue(path, message)
        return
    if error.validator in ("anyOf", "oneOf") and error.context:
        yield from _branch_issues(error, root, locations, registry)
        return
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        for key in sorted(set(error.instance) - set(allowed)):
            yield locations.issue((*path, key), _unknown_key_message(key, allowed), at_key=True)
        return
    if error.validator == "required":
        missing = re.findall(r"'([^']+)' is a required property", error.message)
        what = missing[0] if missing else error.message
        yield locations.issue(path, f"missing required key {what!r}")
        return
    yield locations.issue(path, error.message)


def _unknown_key_message(key: str, allowed: list[str]) -> str:
    message = f"unknown key {key!r}; expected one of: {', '.join(allowed) or 'none'}"
    if _SECRET_WORDS.search(key):
        env_keys = [k for k in allowed if k.endswith("_env")]
        hint = f" (name it with {', '.join(env_keys)})" if env_keys else ""
        message += (
            f". Secrets never go in a pipeline file: put the value in an environment variable{hint}"
        )
    return message


def _component_message(error: ValidationError, kind: str, registry: Registry) -> str | None:
    """What is wrong with a component block's shape or its `type`, in the registry's words.

    None for the block's other errors (an unknown key, a middleware's missing
    `knowledge_bases`), which read as everywhere else.
    """
    if error.validator == "type":
        return f"expected a mapping with a `type` key, got {error.instance!r}"
    if error.validator == "required" and "'type'" in error.message:
        known = ", ".join(registry.names(kind))  # type: ignore[arg-type]
        return f"missing required key 'type' (one of: {known})"
    if error.validator in ("enum", "not"):  # `not` when no type of the kind is in the schema
        known_types = registry.names(kind)  # type: ignore[arg-type]
        return str(UnknownTypeError(kind, str(error.instance), known_types))  # type: ignore[arg-type]
    return None


def _branch_issues(
    error: ValidationError, root: dict[str, Any], locations: Locations, registry: Registry
) -> Iterator[ConfigIssue]:
    """For `str | block` unions: report the branch whose JSON type the value has."""
    branches: dict[int, list[ValidationError]] = {}
    for sub in error.context or []:
        branches.setdefault(sub.relative_schema_path[0], []).append(sub)
    matching = [
        errors for errors in branches.values() if not any(_wrong_json_type(e) for e in errors)
    ]
    if len(matching) == 1:
        for sub in matching[0]:
            yield from _schema_issues(sub, root, locations, registry)
        return
    expected = " or ".join(_describe(b, root) for b in error.schema.get(error.validator, []))
    yield locations.issue(tuple(error.absolute_path), f"{error.instance!r} is not {expected}")


def _wrong_json_type(error: ValidationError) -> bool:
    """Whether a branch's error says the value is of another kind than the branch takes."""
    return not error.relative_path and error.validator == "type"


def _describe(schema: dict[str, Any], root: dict[str, Any]) -> str:
    if "$ref" in schema:
        target = root.get("$defs", {}).get(schema["$ref"].rsplit("/", 1)[-1], {})
        kind = target.get(KIND_MARKER)
        return f"{_article(kind)} {kind} block" if kind else "a mapping"
    name = {"object": "mapping", "array": "list"}.get(schema.get("type", ""), schema.get("type"))
    if name == "null":
        return "null"
    return f"{_article(name)} {name}" if name else "a value"


def _article(word: str) -> str:
    return "an" if word[:1] in ("a", "e", "i", "o", "u") else "a"


def _pydantic_issues(
    exc: PydanticValidationError, prefix: JsonPath, locations: Locations
) -> list[ConfigIssue]:
    issues = []
    for err in exc.errors():
        loc = tuple(part for part in err["loc"] if isinstance(part, int) or not part[:1].isupper())
        path = (*prefix, *loc)
        message = err["msg"].removeprefix("Value error, ")
        issues.append(locations.issue(path, message, at_key=err["type"] == "extra_forbidden"))
    return issues


def _mapping(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _sequence(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _blocks(data: dict[str, Any]) -> Iterator[tuple[JsonPath, Kind, Any]]:
    """Every component block written in the file, with its path and kind.

    It reads the plain data, not the typed spec, so it runs beside the schema's errors.
    """
    for section, kind in _SECTIONS.items():
        for name, block in _mapping(data.get(section)).items():
            yield (section, name), kind, block
    for i, kb in enumerate(_sequence(data.get("knowledge_bases"))):
        kb = _mapping(kb)
        base: JsonPath = ("knowledge_bases", i)
        for j, parser in enumerate(_sequence(kb.get("parsers"))):
            yield (*base, "parsers", j), "parser", parser
        yield (*base, "chunker"), "chunker", kb.get("chunker")
        yield (*base, "embedding"), "embedding", kb.get("embedding")
        yield (*base, "vector_store"), "vector_store", kb.get("vector_store")
        for j, source in enumerate(_sequence(kb.get("sources"))):
            yield (*base, "sources", j), "source", source
    if "execution" in data:
        yield ("execution",), "executor", data["execution"]
    for i, middleware in enumerate(_sequence(data.get("middlewares"))):
        yield ("middlewares", i), "middleware", middleware
        yield (
            ("middlewares", i, "rerank_model"),
            "chat_model",
            _mapping(middleware).get("rerank_model"),
        )


def _parameter_issues(
    data: dict[str, Any], locations: Locations, registry: Registry, checked: list[ConfigIssue]
) -> list[ConfigIssue]:
    """Rules a JSON Schema cannot state (``overlap < chunk_size``), from the Pydantic models.

    Only blocks the schema found no fault in: their own messages say it better.
    """
    faulty = {issue.path for issue in checked}
    issues = []
    for path, kind, block in _blocks(data):
        if not isinstance(block, dict) or not registry.has(kind, block.get("type")):
            continue  # a reference by name, or a block the schema already reported
        where = format_path(path)
        if any(f == where or f.startswith((f"{where}.", f"{where}[")) for f in faulty):
            continue
        model: type[BaseModel] = registry.get(kind, block["type"]).parameters_model
        try:
            model.model_validate(block.get("parameters", {}))
        except PydanticValidationError as exc:
            issues += _pydantic_issues(exc, (*path, "parameters"), locations)
    return issues


def _extra_issues(
    data: dict[str, Any], locations: Locations, registry: Registry
) -> list[ConfigIssue]:
    """Every component whose extra is not installed, with one line that installs them all.

    Found here, a missing extra stops a run before it writes anything, and a
    user fixes all of them at once instead of one per failed run.
    """
    found: list[tuple[JsonPath, str, dict[str, str]]] = []
    for path, kind, block in _blocks(data):
        if isinstance(block, dict) and registry.has(kind, block.get("type")):
            entry = registry.get(kind, block["type"])
            try:
                requires = entry.cls.requires_for(
                    entry.cls.Parameters.model_validate(block.get("parameters", {}))
                )
            except PydanticValidationError:  # reported by _parameter_issues
                requires = entry.cls.requires
            absent = missing(requires)
            if absent:
                found.append((path, block["type"], absent))
    fix = install_line({extra for _, _, absent in found for extra in absent.values()})
    return [
        locations.issue(
            (*path, "type"),
            f"{name!r} needs {', '.join(sorted(absent))} (extra "
            f"{', '.join(sorted(set(absent.values())))}), which is not installed; "
            f"install every missing extra at once: {fix}",
        )
        for path, name, absent in found
    ]


def _reference_issues(data: dict[str, Any], locations: Locations) -> list[ConfigIssue]:
    """Names that must be defined once: knowledge bases, and the blocks they refer to."""
    issues: list[ConfigIssue] = []
    seen: dict[str, int] = {}
    defined = {section: sorted(_mapping(data.get(section))) for section in _SECTIONS}
    for i, kb in enumerate(_sequence(data.get("knowledge_bases"))):
        kb = _mapping(kb)
        where: JsonPath = ("knowledge_bases", i)
        name = kb.get("name")
        if isinstance(name, str) and name in seen:
            issues.append(
                locations.issue(
                    (*where, "name"),
                    f"duplicate knowledge base name {name!r} (first at knowledge_bases[{seen[name]}])",
                )
            )
        elif isinstance(name, str):
            seen[name] = i
        for field, section in (("embedding", "embeddings"), ("vector_store", "vector_stores")):
            reference = kb.get(field)
            if isinstance(reference, str) and reference not in defined[section]:
                issues.append(
                    locations.issue(
                        (*where, field), _undefined(reference, section, defined[section])
                    )
                )
        reranker = _mapping(_mapping(kb.get("retrieval")).get("rerank")).get("reranker")
        if isinstance(reranker, str) and reranker not in defined["rerankers"]:
            issues.append(
                locations.issue(
                    (*where, "retrieval", "rerank", "reranker"),
                    _undefined(reranker, "rerankers", defined["rerankers"]),
                )
            )
    for name, block in _mapping(data.get("rerankers")).items():
        block = _mapping(block)
        chat_model = _mapping(block.get("parameters")).get("chat_model", "")
        if block.get("type") == "llm" and chat_model not in defined["chat_models"]:
            issues.append(
                locations.issue(
                    ("rerankers", name, "parameters", "chat_model"),
                    _undefined(str(chat_model), "chat_models", defined["chat_models"]),
                )
            )
    for i, middleware in enumerate(_sequence(data.get("middlewares"))):
        middleware = _mapping(middleware)
        for j, name in enumerate(_sequence(middleware.get("knowledge_bases"))):
            if isinstance(name, str) and name not in seen:
                issues.append(
                    locations.issue(
                        ("middlewares", i, "knowledge_bases", j),
                        _undefined(name, "knowledge_bases", sorted(seen)),
                    )
                )
        rerank = middleware.get("rerank_model")
        if isinstance(rerank, str) and rerank not in defined["chat_models"]:
            issues.append(
                locations.issue(
                    ("middlewares", i, "rerank_model"),
                    _undefined(rerank, "chat_models", defined["chat_models"]),
                )
            )
    return issues


def _source_issues(
    data: dict[str, Any], locations: Locations, folder: Path, registry: Registry
) -> list[ConfigIssue]:
    """Source blocks whose keys do not fit their kind, and paths leading out of the pipeline
    file's repository, unless opted in.

    Pipeline files arrive in pull requests: a source must not turn one into a
    way to read any file of the machine that indexes it.
    """
    issues = []
    for i, kb in enumerate(_sequence(data.get("knowledge_bases"))):
        for j, source in enumerate(_sequence(_mapping(kb).get("sources"))):
            source = _mapping(source)
            where: JsonPath = ("knowledge_bases", i, "sources", j)
            kind = source.get("type", "local")
            if not registry.has("source", kind):
                continue  # the schema names the unknown type
            if getattr(registry.get("source", kind).cls, "remote", True):
                issues += [
                    locations.issue(
                        (*where, key),
                        f"`{key}` is for local sources; this {kind} source names what it "
                        "reads in its `parameters`",
                        at_key=True,
                    )
                    for key in ("path", "allow_outside")
                    if key in source
                ]
                continue
            path = source.get("path")
            if "path" not in source:
                issues.append(locations.issue(where, "a local source needs `path` (its folder)"))
            if not isinstance(path, str) or source.get("allow_outside") is True:
                continue
            problem = source_escape(path, folder)
            if problem:
                issues.append(locations.issue((*where, "path"), problem))
    return issues


def source_issues(
    loaded: LoadedPipeline, *, require_files: bool = True, only: list[str] | None = None
) -> list[ConfigIssue]:
    """Sources as they are on disk: a missing folder, a pattern that cannot match, no files.

    Apart from :func:`check_file`, which a machine without the sources (one
    that only searches or serves) must pass too. ``validate`` asks for all;
    a run for the first two, before it writes anything.
    """
    issues = []
    for i, kb in enumerate(loaded.spec.knowledge_bases):
        if only is not None and kb.name not in only:
            continue
        for j, source in enumerate(kb.sources):
            where: JsonPath = ("knowledge_bases", i, "sources", j)
            for key in ("include", "exclude"):
                for k, pattern in enumerate(getattr(source, key)):
                    if problem := pattern_problem(pattern):
                        issues.append(loaded.locations.issue((*where, key, k), problem))
            if source.path is None:  # a remote source: validate does not reach for it
                continue
            root = (loaded.folder / source.path).resolve()
            if not root.is_dir():
                issues.append(
                    loaded.locations.issue(
                        (*where, "path"), f"source folder {source.path!r} ({root}) does not exist"
                    )
                )
            elif require_files and not has_files(
                source, root, None if source.allow_outside else allowed_root(loaded.folder)
            ):
                issues.append(
                    loaded.locations.issue(
                        (*where, "include"),
                        f"no file in {source.path!r} matches include {source.include}"
                        + (f" and not exclude {source.exclude}" if source.exclude else "")
                        + " (patterns are gitignore-style: `*.md` matches at any depth)",
                    )
                )
    return issues


def _undefined(name: str, section: str, known: list[str]) -> str:
    close = difflib.get_close_matches(name, known, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    return f"{name!r} is not defined in `{section}` (defined: {defined(known)}){hint}"


def _retrieval_issues(
    spec: PipelineSpec, locations: Locations, registry: Registry
) -> list[ConfigIssue]:
    """A lexical or hybrid knowledge base needs a store with a lexical side, and a stemmer."""
    from ._build import vector_store_block

    issues: list[ConfigIssue] = []
    for i, kb in enumerate(spec.knowledge_bases):
        retrieval = kb.retrieval
        if not retrieval.lexical:
            continue
        where: JsonPath = ("knowledge_bases", i, "retrieval", "mode")
        store_type = vector_store_block(spec, kb).type
        if not getattr(registry.get("vector_store", store_type).cls, "supports_lexical", False):
            lexical_stores = sorted(
                t.name
                for t in registry.types("vector_store")
                if getattr(t.cls, "supports_lexical", False)
            )
            issues.append(
                locations.issue(
                    where,
                    f"retrieval mode {retrieval.mode!r} needs a store with a lexical side, and "
                    f"{store_type!r} has none; use one of {', '.join(lexical_stores)}, or "
                    "mode dense",
                )
            )
        absent = missing({"Stemmer": "hybrid"}) if retrieval.analyzer.stemming else {}
        if absent:
            issues.append(
                locations.issue(
                    where,
                    f"retrieval mode {retrieval.mode!r} stems words with PyStemmer (module "
                    f"Stemmer, extra hybrid), which is not installed; {install_line({'hybrid'})}",
                )
            )
    return issues


def _collection_issues(
    spec: PipelineSpec, locations: Locations, registry: Registry
) -> list[ConfigIssue]:
    """Knowledge bases sharing a collection must agree on dimensions and keep separate scopes."""
    from ._build import embedding_dimensions

    issues: list[ConfigIssue] = []
    claims: dict[tuple[str, str], tuple[int, KnowledgeBaseSpec, int | None]] = {}
    for i, kb in enumerate(spec.knowledge_bases):
        store_key = (
            kb.vector_store
            if isinstance(kb.vector_store, str)
            else kb.vector_store.model_dump_json()
        )
        key = (store_key, kb.collection)
        dimensions = embedding_dimensions(spec, kb, registry)
        if key not in claims:
            claims[key] = (i, kb, dimensions)
            continue
        first_index, first, first_dimensions = claims[key]
        where: JsonPath = ("knowledge_bases", i, "collection")
        if None not in (dimensions, first_dimensions) and dimensions != first_dimensions:
            issues.append(
                locations.issue(
                    where,
                    f"collection {kb.collection!r} is also used by {first.name!r} "
                    f"(knowledge_bases[{first_index}]) with {first_dimensions}-dimensional vectors, "
                    f"but this knowledge base's embedding makes {dimensions}-dimensional ones",
                )
            )
        elif (kb.metadata_filter or None) == (first.metadata_filter or None):
            issues.append(
                locations.issue(
                    where,
                    f"collection {kb.collection!r} is also used by {first.name!r} "
                    f"(knowledge_bases[{first_index}]) with the same metadata_filter; give each "
                    "knowledge base its own collection or its own metadata_filter scope",
                )
            )
    return issues
