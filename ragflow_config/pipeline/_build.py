"""Building live objects from a validated pipeline: stores, models, knowledge bases, middlewares."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._component import Component, is_path_field
from .._errors import defined
from ._registry import Kind, Registry
from ._spec import ComponentBlock, EmbeddingBlock, KnowledgeBaseSpec, PipelineSpec, VectorStoreBlock

if TYPE_CHECKING:  # `build` imports what it builds: checking a file needs none of it
    from ..agentscope_bridge import AgentScopeObjects
    from ..embedding import EmbeddingCacheBase, EmbeddingModelBase
    from ..executors import ExecutorBase
    from ..rag import ChunkerBase, KnowledgeBase, ParserBase, VectorStoreBase
    from ..rerankers import RerankerBase


def build_component(
    registry: Registry, kind: Kind, block: ComponentBlock, folder: Path | None = None
) -> Any:
    """An instance of the block's registered type, built from its validated parameters."""
    cls: type[Component] = registry.get(kind, block.type).cls
    parameters = dict(block.parameters)
    if folder is not None:
        for name, value in parameters.items():
            if (
                isinstance(value, str)
                and "://" not in value
                and is_path_field(cls.Parameters, name)
            ):
                parameters[name] = str((folder / value).resolve())
    return cls(parameters=cls.Parameters.model_validate(parameters))


def embedding_block(spec: PipelineSpec, kb: KnowledgeBaseSpec) -> EmbeddingBlock:
    return spec.embeddings[kb.embedding] if isinstance(kb.embedding, str) else kb.embedding


def vector_store_block(spec: PipelineSpec, kb: KnowledgeBaseSpec) -> VectorStoreBlock:
    return (
        spec.vector_stores[kb.vector_store] if isinstance(kb.vector_store, str) else kb.vector_store
    )


def embedding_dimensions(
    spec: PipelineSpec, kb: KnowledgeBaseSpec, registry: Registry
) -> int | None:
    """The vector length a knowledge base's embedding makes, when it can be known offline."""
    try:
        model: EmbeddingModelBase = build_component(
            registry, "embedding", embedding_block(spec, kb)
        )
        return model.dimensions
    except Exception:
        return None


@dataclass
class IndexingPlan:
    """What indexing one knowledge base needs beyond its handle."""

    spec: KnowledgeBaseSpec
    knowledge_base: KnowledgeBase
    parsers: list[ParserBase]
    chunker: ChunkerBase


def _local_executor() -> ExecutorBase:
    from ..executors import LocalExecutor

    return LocalExecutor()


@dataclass
class BuiltPipeline:
    """A pipeline's live objects. Valid inside the ``async with`` that built them."""

    spec: PipelineSpec
    folder: Path
    knowledge_bases: dict[str, KnowledgeBase]
    middlewares: list[Any]
    indexing: dict[str, IndexingPlan] = field(default_factory=dict)
    executor: ExecutorBase = field(default_factory=_local_executor)
    # What `run` embeds through (the models keep none of their own, so searches write nothing).
    embedding_cache: EmbeddingCacheBase | None = None
    # The pipeline file's name, part of the writer identity runs stamp (see _owners).
    pipeline_file: str = ""
    # Every store, model and reranker opened, by (kind, block): a later build given them
    # (``build(opened=...)``) uses these instead of opening its own (see ``build``).
    opened: dict[tuple[str, str], Any] = field(default_factory=dict)

    def knowledge_base(self, name: str) -> KnowledgeBase:
        try:
            return self.knowledge_bases[name]
        except KeyError:
            raise KeyError(
                f"no knowledge base named {name!r} (defined: {defined(self.knowledge_bases)})"
            ) from None

    def as_agentscope(self, *, rerank_model: Any = None) -> AgentScopeObjects:
        """The knowledge bases and middlewares as AgentScope 2.x objects (the ``agentscope`` extra).

        See :mod:`ragflow_config.agentscope_bridge`.
        """
        from ..agentscope_bridge import as_agentscope

        return as_agentscope(self, rerank_model=rerank_model)


@contextlib.asynccontextmanager
async def build(
    spec: PipelineSpec,
    folder: Path,
    registry: Registry,
    only: list[str] | None = None,
    *,
    search_only: bool = False,
    opened: dict[tuple[str, str], Any] | None = None,
) -> AsyncIterator[BuiltPipeline]:
    """Enter every store and model the pipeline (or the named knowledge bases) uses.

    Named blocks are built once and shared: two knowledge bases naming one
    store use one connection. ``search_only`` builds the knowledge bases alone:
    no parsers, chunkers, executor, embedding cache or middlewares.

    ``opened`` is another build's ``BuiltPipeline.opened``, still open: a block
    described the same way is taken from it and neither opened nor closed here.
    A server runs its pipeline file again this way with the one client it holds
    (Qdrant Edge and Qdrant's local folder admit one process).
    """
    from ..embedding import FileEmbeddingCache
    from ..rag import KnowledgeBase

    wanted = [kb for kb in spec.knowledge_bases if only is None or kb.name in only]
    async with contextlib.AsyncExitStack() as stack:
        shared: dict[tuple[str, str], Any] = dict(opened or {})

        async def component(
            kind: Kind, reference: str | ComponentBlock, section: dict[str, Any]
        ) -> Any:
            key = (kind, reference if isinstance(reference, str) else reference.model_dump_json())
            if key not in shared:
                block = section[reference] if isinstance(reference, str) else reference
                instance = build_component(registry, kind, block, folder)
                if hasattr(instance, "__aenter__"):
                    instance = await stack.enter_async_context(instance)
                shared[key] = instance
            return shared[key]

        async def reranker(name: str) -> RerankerBase:
            # Imported here: a search of a knowledge base with no reranker (most) never pays for
            # the rerankers' HTTP client and credentials.
            from ..rerankers._llm import LLMReranker

            instance: RerankerBase = await component("reranker", name, spec.rerankers)
            if isinstance(instance, LLMReranker) and instance.model is None:
                instance.model = await component(
                    "chat_model", instance.parameters.chat_model, spec.chat_models
                )
            return instance

        built = BuiltPipeline(spec, folder, {}, [], opened=shared)
        if not search_only:
            built.executor = build_component(registry, "executor", spec.execution, folder)
        if spec.embedding_cache is not None and not search_only:
            settings = spec.embedding_cache
            built.embedding_cache = FileEmbeddingCache(
                (folder / Path(settings.path).expanduser()).resolve(),
                max_file_number=settings.max_entries,
                max_cache_size=None if settings.max_bytes is None else settings.max_bytes / 2**20,
            )
        for kb_spec in wanted:
            store: VectorStoreBase = await component(
                "vector_store", kb_spec.vector_store, spec.vector_stores
            )
            model: EmbeddingModelBase = await component(
                "embedding", kb_spec.embedding, spec.embeddings
            )
            rerank = kb_spec.retrieval.rerank
            knowledge_base = KnowledgeBase(
                name=kb_spec.name,
                description=kb_spec.description,
                embedding_model=model,
                vector_store=store,
                collection=kb_spec.collection,
                metadata_filter=kb_spec.metadata_filter,
                retrieval=kb_spec.retrieval,
                reranker=await reranker(rerank.reranker) if rerank is not None else None,
            )
            built.knowledge_bases[kb_spec.name] = knowledge_base
            if search_only:
                continue
            built.indexing[kb_spec.name] = IndexingPlan(
                spec=kb_spec,
                knowledge_base=knowledge_base,
                parsers=[build_component(registry, "parser", p, folder) for p in kb_spec.parsers],
                chunker=build_component(registry, "chunker", kb_spec.chunker, folder),
            )
        for middleware in [] if search_only else spec.middlewares:
            if not set(middleware.knowledge_bases) <= set(built.knowledge_bases):
                continue  # built only for a subset of knowledge bases
            rerank = (
                await component("chat_model", middleware.rerank_model, spec.chat_models)
                if middleware.rerank_model is not None
                else None
            )
            cls = registry.get("middleware", middleware.type).cls
            built.middlewares.append(
                cls(
                    knowledge_bases=[built.knowledge_bases[n] for n in middleware.knowledge_bases],
                    rerank_model=rerank,
                    parameters=cls.Parameters.model_validate(middleware.parameters),
                )
            )
        yield built
