"""``RAGMiddleware``: knowledge bases in an agent's reasoning-acting loop.

The registry imports this module for the class's ``Parameters`` when `validate`
checks a file's ``middlewares:`` block (a pre-commit hook, on every commit), so
what only a running middleware needs (the knowledge base, the events, the
tool) is imported by the methods that use it, not here.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar

from ..._foreign import refuse_agentscope
from ...message import HintBlock, Msg
from .._base import HookedAgent, HookStream, MiddlewareBase, NextHandler
from .format import Query, format_results, queries_from, wrap_hint
from .parameters import RAGParameters
from .search import Searchable, search_across

if TYPE_CHECKING:
    from ...model import ChatModelBase
    from ...rag import VectorSearchResult
    from ...rerankers import RerankerBase
    from ...tool import ToolBase

logger = logging.getLogger("ragflow_config.middleware.rag")

# The hint's ``source``, as AgentScope labels it: JSON a frontend parses into a label.
HINT_SOURCE = json.dumps({"label": "KnowledgeBase", "sublabel": ""})


class RAGMiddleware(MiddlewareBase):
    """Retrieval from pre-built knowledge bases, in one of two modes.

    ``static``: before the first reasoning step of every reply, search with
    the reply's input and inject the hits as a hint (a user turn for the
    model), removed after that step unless ``persist_hint``. ``agentic``:
    :meth:`list_tools` offers a ``search_knowledge`` tool; register it in the
    agent's toolkit. Attach two instances to use both. The knowledge bases
    may use different embedding models: their rankings are merged by
    reciprocal rank fusion, never by raw score. With a ``reranker`` (any
    component of ``ragflow_config.rerankers``, the one a knowledge base would
    name) or a ``rerank_model`` (a chat model, made an ``LLMReranker``) each
    search pulls ``rerank_candidate_k`` candidates and the reranker keeps
    ``top_k``. Its per-reply data is kept by reply id, so one instance can
    serve many agents and concurrent replies.
    """

    Parameters: ClassVar[type[RAGParameters]] = RAGParameters
    parameters: RAGParameters

    def __init__(
        self,
        knowledge_bases: Sequence[Searchable],
        parameters: RAGParameters | None = None,
        rerank_model: ChatModelBase | None = None,
        *,
        reranker: RerankerBase | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        for knowledge_base in knowledge_bases:
            refuse_agentscope(
                knowledge_base,
                "RAGMiddleware",
                "build it with ragflow_config.rag.KnowledgeBase, which takes the same arguments "
                "(or give agentscope's knowledge bases to agentscope's RAGMiddleware)",
            )
        refuse_agentscope(
            rerank_model,
            "RAGMiddleware",
            f"use ragflow_config.model.{type(rerank_model).__name__}, which takes the same "
            "arguments, as the rerank model",
        )
        if reranker is not None and rerank_model is not None:
            raise ValueError("pass a reranker or a rerank_model, not both")
        repeated = [name for name, n in Counter(kb.name for kb in knowledge_bases).items() if n > 1]
        if repeated:
            raise ValueError(
                f"knowledge base names must be unique (the model picks bases by name): "
                f"{', '.join(map(repr, repeated))} given more than once"
            )
        self.knowledge_bases = tuple(knowledge_bases)
        self.rerank_model = rerank_model
        if rerank_model is not None:
            # Imported here: checking a pipeline file loads this class, and no reranker.
            from ...rerankers import LLMReranker

            reranker = LLMReranker(model=rerank_model, rerank_prompt=self.parameters.rerank_prompt)
        self.reranker = reranker
        # The queries of each reply in progress, by reply id: replies of
        # several agents may run through this one middleware at once.
        self._queries: dict[str, list[Query]] = {}

    async def list_tools(self) -> list[ToolBase]:
        if self.parameters.mode != "agentic":
            return []
        from .tool import SearchKnowledgeTool

        return [SearchKnowledgeTool(self.knowledge_bases, self.retrieve)]

    async def retrieve(
        self,
        queries: Sequence[Query],
        knowledge_bases: Sequence[Searchable] | None = None,
    ) -> list[VectorSearchResult]:
        """Search (all, or the given) knowledge bases, merge, rerank; at most ``top_k`` hits."""
        p = self.parameters
        targets = self.knowledge_bases if knowledge_bases is None else knowledge_bases
        if self.reranker is None:
            return await search_across(
                targets, queries, limit=p.top_k, score_threshold=p.score_threshold
            )
        candidates = await search_across(
            targets, queries, limit=p.rerank_candidates, score_threshold=p.score_threshold
        )
        if not candidates:
            return []
        return await self.reranker.rerank(queries, candidates, top_k=p.top_k)

    async def on_reply(
        self, agent: HookedAgent, input_kwargs: dict[str, Any], next_handler: NextHandler
    ) -> HookStream:
        """Note the reply's queries (static mode searches with them), under its ``reply_id``."""
        inputs = input_kwargs.get("inputs")
        if isinstance(inputs, Msg):
            inputs = [inputs]
        # Anything but messages (a resumption event, None) means no search.
        messages = (
            inputs if isinstance(inputs, list) and all(isinstance(m, Msg) for m in inputs) else []
        )
        reply_id = agent.state.reply_id
        self._queries[reply_id] = queries_from(messages)
        try:
            async for item in next_handler(**input_kwargs):
                yield item
        finally:
            self._queries.pop(reply_id, None)

    async def on_reasoning(
        self, agent: HookedAgent, input_kwargs: dict[str, Any], next_handler: NextHandler
    ) -> HookStream:
        """In static mode, before the reply's first step: the hint, and its event if asked."""
        p = self.parameters
        state = agent.state
        queries = (
            self._queries.get(state.reply_id)
            if p.mode == "static" and state.cur_iter == 0
            else None
        )
        from ...event import HintBlockEvent

        hint: HintBlock | None = None
        try:
            if queries:
                try:
                    hits = await self.retrieve(queries)
                except Exception:
                    logger.exception("static retrieval failed; reasoning without retrieved context")
                    hits = []
                if hits:
                    hint = HintBlock(
                        hint=wrap_hint(p.hint_template, format_results(hits)), source=HINT_SOURCE
                    )
                    # On the reply's own message, as AgentScope; formats send a hint as a user turn.
                    state.append_context(agent.name, [hint])
                    if p.emit_hint_event:
                        yield HintBlockEvent(
                            reply_id=state.reply_id,
                            block_id=hint.id,
                            source=hint.source,
                            hint=hint.hint,
                        )
            async for item in next_handler(**input_kwargs):
                yield item
        finally:
            if hint is not None and not p.persist_hint:
                _remove_block(state.context, state.reply_id, hint.id)


def _remove_block(context: list[Msg], message_id: str, block_id: str) -> None:
    """Drop the block from the latest message ``message_id`` (the message may stay, empty)."""
    for message in reversed(context):
        if message.id == message_id:
            message.content = [block for block in message.content if block.id != block_id]
            return
