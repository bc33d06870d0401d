"""Declarative pipelines: YAML files that define knowledge bases and the middlewares using them."""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

if TYPE_CHECKING:
    from ._build import BuiltPipeline
    from ._copy import CopyRefused, CopyReport, copy_knowledge_base
    from ._generations import Rebuild, RollbackRefused, rollback
    from ._pipeline import Pipeline
    from ._registry import ComponentType, Registry, UnknownTypeError, default_registry
    from ._run import Change, KnowledgeBaseReport, RunOptions, RunRefused, RunReport

# Imported on first use: `validate` needs the registry and the checks, not the runner.
__getattr__ = lazy_exports(
    __name__,
    {
        "BuiltPipeline": "._build",
        "Change": "._run",
        "ComponentType": "._registry",
        "CopyRefused": "._copy",
        "CopyReport": "._copy",
        "KnowledgeBaseReport": "._run",
        "Pipeline": "._pipeline",
        "Rebuild": "._generations",
        "Registry": "._registry",
        "RollbackRefused": "._generations",
        "RunOptions": "._run",
        "RunRefused": "._run",
        "RunReport": "._run",
        "UnknownTypeError": "._registry",
        "copy_knowledge_base": "._copy",
        "default_registry": "._registry",
        "rollback": "._generations",
    },
)

__all__ = [
    "BuiltPipeline",
    "Change",
    "ComponentType",
    "CopyRefused",
    "CopyReport",
    "KnowledgeBaseReport",
    "Pipeline",
    "Rebuild",
    "Registry",
    "RollbackRefused",
    "RunOptions",
    "RunRefused",
    "RunReport",
    "UnknownTypeError",
    "copy_knowledge_base",
    "default_registry",
    "rollback",
]
