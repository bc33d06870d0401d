"""Turning built knowledge bases and RAG middlewares into AgentScope objects."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from .._extras import require
from ..middleware import RAGMiddleware
from ..rag import KnowledgeBase, RemoteKnowledgeBase


class BuiltObjects(Protocol):
    """What the bridge reads of a built pipeline: the pipeline's ``BuiltPipeline`` is one.

    Named here, so that the bridge, which the pipeline offers as
    ``BuiltPipeline.as_agentscope``, never imports the pipeline.
    """

    @property
    def knowledge_bases(self) -> Mapping[str, KnowledgeBase]:
        """The built knowledge bases, by name."""
        ...

    @property
    def middlewares(self) -> Sequence[Any]:
        """The built middlewares; the bridge takes the ``RAGMiddleware`` ones."""
        ...


# RAGMiddleware.Parameters fields that mean the same on both sides.
_SHARED_PARAMETERS = {
    "mode",
    "top_k",
    "score_threshold",
    "rerank_candidate_k",
    "emit_hint_event",
    "persist_hint",
    "hint_template",
    "rerank_prompt",
}


@dataclass(frozen=True)
class AgentScopeObjects:
    """What an AgentScope ``Agent`` takes: knowledge base handles and middlewares.

    ``knowledge_bases`` are ``agentscope.rag.KnowledgeBase`` instances by
    name; ``middlewares`` are ``agentscope.middleware.RAGMiddleware``
    instances, in the pipeline's order. Agentic-mode middlewares' tools are
    not registered anywhere by themselves: pass :meth:`tools` to the
    agent's ``Toolkit``.
    """

    knowledge_bases: dict[str, Any] = field(default_factory=dict)
    middlewares: list[Any] = field(default_factory=list)

    async def tools(self) -> list[Any]:
        """Every middleware's tools (``search_knowledge`` of each agentic one)."""
        tools: list[Any] = []
        for each in self.middlewares:
            tools.extend(await each.list_tools())
        return tools


def knowledge_base(ours: KnowledgeBase | RemoteKnowledgeBase) -> Any:
    """An ``agentscope.rag.KnowledgeBase`` whose every operation runs on ``ours``
    (a ``RemoteKnowledgeBase``'s on its server: search and list_documents)."""
    from ._native import BridgedKnowledgeBase

    return BridgedKnowledgeBase(ours)


def middleware(
    ours: RAGMiddleware,
    knowledge_bases: Mapping[str, Any] | None = None,
    *,
    rerank_model: Any = None,
) -> Any:
    """AgentScope's ``RAGMiddleware`` with ``ours``'s knowledge bases and parameters.

    ``knowledge_bases`` maps names to handles already bridged (so that one
    handle serves every middleware); the others are bridged here.
    ``rerank_model``, an AgentScope chat model, replaces the middleware's own
    rerank model; by default that one (a ragflow_config chat model) is
    wrapped as an AgentScope chat model.
    """
    agentscope_middleware = require("agentscope.middleware", "agentscope")
    if ours.rerank_model is not None and rerank_model is None:
        from ._native import BridgedChatModel

        rerank_model = BridgedChatModel(ours.rerank_model)
    bridged = dict(knowledge_bases or {})
    handles = [bridged.get(kb.name) or knowledge_base(kb) for kb in ours.knowledge_bases]
    # The fields the pipeline set; AgentScope's defaults (its prompt wording) for the rest.
    settings = ours.parameters.model_dump(include=_SHARED_PARAMETERS, exclude_unset=True)
    parameters = agentscope_middleware.RAGMiddleware.Parameters(**settings)
    return agentscope_middleware.RAGMiddleware(
        knowledge_bases=handles, parameters=parameters, rerank_model=rerank_model
    )


def as_agentscope(built: BuiltObjects, *, rerank_model: Any = None) -> AgentScopeObjects:
    """Every knowledge base and middleware of ``built``, as AgentScope objects.

    Valid as long as ``built`` is (inside its ``async with``). The
    middlewares that rerank do it with their own rerank model, wrapped as an
    AgentScope chat model, or with ``rerank_model`` (an AgentScope one) if given.
    """
    handles = {name: knowledge_base(kb) for name, kb in built.knowledge_bases.items()}
    middlewares: Sequence[Any] = [
        middleware(
            each, handles, rerank_model=rerank_model if each.rerank_model is not None else None
        )
        for each in built.middlewares
        if isinstance(each, RAGMiddleware)
    ]
    return AgentScopeObjects(knowledge_bases=handles, middlewares=list(middlewares))
