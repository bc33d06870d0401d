"""The Python API of a pipeline file: load it, build it, run it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._errors import ConfigError, defined
from ._build import BuiltPipeline, build
from ._registry import Registry, default_registry
from ._spec import PipelineSpec
from ._validate import LoadedPipeline, load_pipeline, source_issues

if TYPE_CHECKING:  # `run` imports the runner: a search or a check needs none of it
    from ._run import RunOptions, RunReport


class Pipeline:
    """A validated pipeline file.

    >>> pipeline = Pipeline.load("pipelines/local.yaml")
    >>> async with pipeline.build() as built:
    ...     kb = built.knowledge_bases["python-docs"]
    ...     hits = await kb.search(["How do I open a file?"])
    """

    def __init__(self, loaded: LoadedPipeline, registry: Registry) -> None:
        self._loaded = loaded
        self._registry = registry

    @classmethod
    def load(cls, path: str | Path, registry: Registry | None = None) -> Pipeline:
        """Read and validate ``path``; raises ``ConfigError`` listing every problem."""
        registry = registry or default_registry()
        return cls(load_pipeline(path, registry), registry)

    @property
    def registry(self) -> Registry:
        """The types this pipeline's components were looked up in."""
        return self._registry

    @property
    def spec(self) -> PipelineSpec:
        return self._loaded.spec

    @property
    def path(self) -> Path:
        return self._loaded.path

    @property
    def knowledge_base_names(self) -> list[str]:
        return [kb.name for kb in self.spec.knowledge_bases]

    def _check_names(self, names: list[str] | None) -> None:
        unknown = sorted(set(names or []) - set(self.knowledge_base_names))
        if unknown:
            raise KeyError(
                f"{self.path.name}: no knowledge base named {', '.join(map(repr, unknown))} "
                f"(defined: {defined(self.knowledge_base_names)})"
            )

    @asynccontextmanager
    async def build(
        self,
        knowledge_bases: list[str] | None = None,
        *,
        search_only: bool = False,
        opened: dict[tuple[str, str], Any] | None = None,
    ) -> AsyncIterator[BuiltPipeline]:
        """Open the stores and build the knowledge bases and middlewares.

        With ``knowledge_bases``, only those (and the middlewares using only them) are built.
        With ``search_only``, only the knowledge bases' stores and models: no parsers,
        chunkers, executor, embedding cache or middlewares (what `search` needs).
        With ``opened`` (another build's ``BuiltPipeline.opened``), its open stores and
        models are used where this file describes the same blocks.
        """
        self._check_names(knowledge_bases)
        async with build(
            self.spec,
            self._loaded.folder,
            self._registry,
            knowledge_bases,
            search_only=search_only,
            opened=opened,
        ) as built:
            built.pipeline_file = self.path.name
            yield built

    async def run(
        self,
        knowledge_bases: list[str] | None = None,
        options: RunOptions | None = None,
        *,
        opened: dict[tuple[str, str], Any] | None = None,
    ) -> RunReport:
        """Index the sources: only what changed since the last run.

        A missing source folder, or a pattern that cannot match, raises
        ``ConfigError`` with its place in the file before anything is written.
        ``opened``: as for :meth:`build` (a server refreshing what it serves).
        """
        issues = source_issues(self._loaded, require_files=False, only=knowledge_bases)
        if issues:
            raise ConfigError(issues)
        from ._run import RunOptions, run

        async with self.build(knowledge_bases, opened=opened) as built:
            return await run(built, knowledge_bases, options or RunOptions())
