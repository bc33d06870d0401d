"""The settings a knowledge base's fingerprint digests, described, so a change can name values.

A run's fingerprint (``fingerprint`` in ``_run``) keeps one short digest per
part: enough to know that the chunker changed, not that ``chunk_size`` went
from 256 to 128. Chunk 0 of each document therefore also keeps ``settings``,
the parts those digests are made from, described: the next plan compares them
with its own and names each changed value by its dotted path. They are
described beside the digests, never digested: adding them re-indexes nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..embedding import EmbeddingParameters
from ._build import IndexingPlan
from ._generations import most_common

#: A flat change of one setting: its dotted path, the old value and the new one
#: (``None`` for a setting one side does not have).
SettingChange = tuple[str, Any, Any]


def described_settings(plan: IndexingPlan) -> dict[str, Any]:
    """What produces a knowledge base's vectors, part by part, as the fingerprint digests it."""
    model = plan.knowledge_base.embedding_model
    embedding: dict[str, Any] = {
        "class": type(model).__name__,
        "model": model.model,
        "dimensions": model.dimensions,
    }
    parameters = model.parameters
    if isinstance(parameters, EmbeddingParameters) and (
        shaping := parameters.vector_settings_changed()
    ):
        embedding["parameters"] = shaping
    parsers: dict[str, Any] = {}
    for block, parser in zip(plan.spec.parsers, plan.parsers, strict=True):
        name, n = block.type, 2
        while name in parsers:  # the same type twice: its second block is `type#2`
            name, n = f"{block.type}#{n}", n + 1
        parsers[name] = {"parameters": parser.parameters.fingerprint_settings()}
    settings: dict[str, Any] = {
        "embedding": embedding,
        "chunker": {
            "type": plan.spec.chunker.type,
            "parameters": plan.chunker.parameters.fingerprint_settings(),
        },
        "parsers": parsers,
    }
    retrieval = plan.knowledge_base.retrieval
    if retrieval.lexical:
        settings["lexical"] = retrieval.index_settings()
    # As stored: JSON's types, so an old and a new value compare equal when they are.
    described: dict[str, Any] = json.loads(json.dumps(settings))
    return described


def most_common_settings(states: Iterable[dict[str, Any]]) -> dict[str, Any] | None:
    """The ``settings`` most of the given chunk 0 states carry; ``None`` when none does
    (documents indexed before settings were kept)."""
    return most_common(states, "settings")


def setting_changes(
    old: dict[str, Any], new: dict[str, Any], parts: Iterable[str] | None = None
) -> list[SettingChange]:
    """Each leaf setting that differs between ``old`` and ``new``, by dotted path, sorted.

    ``parts`` limits the comparison to those top-level parts (the ones whose
    fingerprint digest changed), so a setting described differently by another
    version of this package, though it digests the same, is not reported.
    """
    chosen = set(old) | set(new) if parts is None else set(parts)
    flat_old = {p: v for p, v in _flatten(old) if p.split(".", 1)[0] in chosen}
    flat_new = {p: v for p, v in _flatten(new) if p.split(".", 1)[0] in chosen}
    return [
        (path, flat_old.get(path), flat_new.get(path))
        for path in sorted(flat_old.keys() | flat_new.keys())
        if flat_old.get(path) != flat_new.get(path)
    ]


def _flatten(value: Any, prefix: str = "") -> Iterable[tuple[str, Any]]:
    if isinstance(value, dict) and value:
        for key, inner in value.items():
            yield from _flatten(inner, f"{prefix}.{key}" if prefix else str(key))
    else:
        yield prefix, value
