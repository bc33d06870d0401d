"""Declarative pipelines: YAML files that define knowledge bases and the middlewares using them."""

from ._build import BuiltPipeline
from ._copy import CopyRefused, CopyReport, copy_knowledge_base
from ._generations import Rebuild, RollbackRefused, rollback
from ._pipeline import Pipeline
from ._registry import ComponentType, Registry, UnknownTypeError, default_registry
from ._run import Change, KnowledgeBaseReport, RunOptions, RunRefused, RunReport

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
