"""``validate --check-env``: what a valid pipeline file needs from the machine, before a run.

Three checks, one line each, writing nothing: every environment variable the file
names is set; every vector store opens, or its server answers; every embedding
model loads, or its endpoint embeds one text. Secrets are named, never shown.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Literal

from .._component import Component, ComponentParameters
from .._errors import EmbeddingError, RagflowError, defined
from .._http import key_required
from .._redact import redact_urls
from ..credential import CredentialBase
from ._build import build_component
from ._registry import Kind, Registry, default_registry
from ._spec import ComponentBlock
from ._validate import LoadedPipeline
from ._yaml import _REFERENCE

__all__ = ["EnvironmentCheck", "check_environment"]

CheckKind = Literal["variable", "vector_store", "embedding"]

# What an embedding model is asked to embed: one short text, as a first run's would be.
PROBE_TEXT = "ragflow-config check: can this model embed a text?"


@dataclass(frozen=True)
class EnvironmentCheck:
    """One check's outcome: ``ok`` is ``None`` where there was nothing it could check."""

    kind: CheckKind
    name: str  # a variable, or where the file defines the block (`vector_stores.local`)
    ok: bool | None
    message: str
    type: str | None = None  # the block's registered type

    def __str__(self) -> str:
        mark = {True: "ok", False: "FAILED", None: "--"}[self.ok]
        what = f"{self.name} ({self.type})" if self.type else self.name
        return f"{mark:<6} {self.kind.replace('_', ' ')} {what}: {self.message}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "type": self.type,
            "ok": self.ok,
            "message": self.message,
        }


async def check_environment(
    loaded: LoadedPipeline, registry: Registry | None = None
) -> list[EnvironmentCheck]:
    """Every check of ``loaded``: its variables, then its stores, then its embedding models."""
    registry = registry or default_registry()
    blocks = list(_blocks(loaded))
    checks = _variable_checks(loaded, blocks, registry)
    for name, kind, block in blocks:
        if kind == "vector_store" or kind == "embedding":
            checks.append(await _component_check(loaded, name, kind, block, registry))
    return checks


def _blocks(loaded: LoadedPipeline) -> Iterator[tuple[str, Kind, ComponentBlock]]:
    """Every store, model and reranker block the file writes, by the name it is known by."""
    spec = loaded.spec
    sections: tuple[tuple[str, Kind, dict[str, Any]], ...] = (
        ("vector_stores", "vector_store", spec.vector_stores),
        ("embeddings", "embedding", spec.embeddings),
        ("chat_models", "chat_model", spec.chat_models),
        ("rerankers", "reranker", spec.rerankers),
    )
    for section, kind, blocks in sections:
        for name, block in blocks.items():
            yield f"{section}.{name}", kind, block
    for i, kb in enumerate(spec.knowledge_bases):
        if not isinstance(kb.vector_store, str):
            yield f"knowledge_bases[{i}].vector_store", "vector_store", kb.vector_store
        if not isinstance(kb.embedding, str):
            yield f"knowledge_bases[{i}].embedding", "embedding", kb.embedding
    for i, middleware in enumerate(spec.middlewares):
        if isinstance(middleware.rerank_model, ComponentBlock):
            yield f"middlewares[{i}].rerank_model", "chat_model", middleware.rerank_model


def _variable_checks(
    loaded: LoadedPipeline, blocks: list[tuple[str, Kind, ComponentBlock]], registry: Registry
) -> list[EnvironmentCheck]:
    """The file's ``${VAR}`` references, then the variables its blocks read secrets from.

    A block's variable is checked when the block needs it, or when the file names
    it (``api_key_env: MY_KEY``); an optional one left at its default and unset is
    not (a Qdrant store on disk has no use for QDRANT_API_KEY).
    """
    users: dict[str, list[str]] = {}
    required: set[str] = set()
    for name, kind, block in blocks:
        cls = registry.get(kind, block.type).cls
        parameters = cls.Parameters.model_validate(block.parameters)
        for variable, needed, written in _secret_variables(cls, parameters, block):
            if needed or written or os.environ.get(variable):
                users.setdefault(variable, []).append(name)
            if needed:
                required.add(variable)
    checks = []
    for variable, where in _references(loaded).items():
        if os.environ.get(variable) is not None:
            checks.append(EnvironmentCheck("variable", variable, True, f"set (read at {where})"))
        else:  # validation passed, so the reference gives a default
            message = f"not set; the default written at {where} is used"
            checks.append(EnvironmentCheck("variable", variable, None, message))
    for variable, names in users.items():
        by = defined(names)
        if os.environ.get(variable):
            checks.append(EnvironmentCheck("variable", variable, True, f"set (for {by})"))
        else:
            need = "needs" if variable in required else "names"
            checks.append(
                EnvironmentCheck(
                    "variable",
                    variable,
                    False,
                    f"not set; {by} {need} it: export {variable}=... (or name another "
                    "variable with the block's *_env parameter)",
                )
            )
    return checks


def _secret_variables(
    cls: type[Component], parameters: ComponentParameters, block: ComponentBlock
) -> Iterator[tuple[str, bool, bool]]:
    """Each ``*_env`` parameter's variable, whether the block needs it, and whether the
    file wrote it. A variable is needed when the credential that reads it by default
    requires it (PGVECTOR_DSN), or when it holds the key of an API that refuses every
    request without one (OPENAI_API_KEY for api.openai.com)."""
    requirements = _credential_requirements()
    for name, field in type(parameters).model_fields.items():
        if not name.endswith("_env"):
            continue
        needed = requirements.get(str(field.default), False)
        base_url = getattr(parameters, "base_url", None)
        if name == "api_key_env" and isinstance(base_url, str) and key_required(base_url):
            needed = True
        yield str(getattr(parameters, name)), needed, name in block.parameters


def _credential_requirements() -> dict[str, bool]:
    """Each credential's default variable, and whether the credential requires it."""
    found: dict[str, bool] = {}
    pending = list(CredentialBase.__subclasses__())
    while pending:
        credential = pending.pop()
        pending += credential.__subclasses__()
        for field_name, field in credential.model_fields.items():
            found[credential.default_variable(field_name)] = field.is_required()
    return found


def _references(loaded: LoadedPipeline) -> dict[str, str]:
    """Each ``${VAR}`` the file reads, with where it first does (file:line)."""
    found: dict[str, str] = {}
    for path, (written, _) in sorted(loaded.locations.from_environment.items(), key=str):
        line, _column = loaded.locations.of_value(path)
        for match in _REFERENCE.finditer(written):
            if match.group(1):
                found.setdefault(match.group(1), f"{loaded.locations.file}:{line}")
    return found


async def _component_check(
    loaded: LoadedPipeline,
    name: str,
    kind: Literal["vector_store", "embedding"],
    block: ComponentBlock,
    registry: Registry,
) -> EnvironmentCheck:
    try:
        component = build_component(registry, kind, block, loaded.folder)
        if kind == "vector_store":
            message = await component.probe()
        else:
            message = await _embeds(component)
    except NotImplementedError as exc:
        return EnvironmentCheck(kind, name, None, f"not checked: {exc}", block.type)
    except Exception as exc:  # any failure is this check's finding, reported on its line
        return EnvironmentCheck(kind, name, False, _one_line(exc), block.type)
    return EnvironmentCheck(kind, name, True, message, block.type)


async def _embeds(model: Any) -> str:
    """Load the model, or ask its endpoint, to embed one text of the expected length."""
    entered = model if hasattr(model, "__aenter__") else contextlib.nullcontext()
    async with entered:
        vectors = await model.embed_batch([PROBE_TEXT])
    if len(vectors) != 1 or len(vectors[0]) != model.dimensions:
        lengths = [len(vector) for vector in vectors]
        raise EmbeddingError(
            f"asked for one {model.dimensions}-dimensional vector, got vectors of {lengths}: "
            "set the block's dimensions to what the model makes"
        )
    return f"embeds a text ({model.dimensions} dimensions)"


def _one_line(exc: Exception) -> str:
    """An error as one line. The library's own errors say what to do and hide secrets;
    another's is named by its type, and any URL in it loses its credentials."""
    text = " ".join(str(exc).split())
    if not isinstance(exc, RagflowError):
        text = f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return redact_urls(text)
