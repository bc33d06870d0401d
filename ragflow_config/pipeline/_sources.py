"""A knowledge base's files, from every source block, through the registered source kinds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import cast

from ..sources import SourceBase, SourceFile, SourceOutsideError, SourceSpec
from ._registry import default_registry
from ._spec import KnowledgeBaseSpec


def source_kind(spec: SourceSpec) -> SourceBase:
    """The registered kind a source block names, built from its parameters."""
    cls = default_registry().get("source", spec.type).cls
    return cast(SourceBase, cls(parameters=cls.Parameters.model_validate(spec.parameters)))


def discover(kb: KnowledgeBaseSpec, folder: Path) -> Iterator[SourceFile]:
    """Every file of every source, in a stable order (see each kind's ``files``)."""
    for source in kb.sources:
        try:
            yield from source_kind(source).files(source, folder)
        except SourceOutsideError as exc:
            raise SourceOutsideError(f"{kb.name}: {exc}") from None
