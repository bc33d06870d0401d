"""A chat model as a reranker: it reads the candidates and names the best, in order.

``RAGMiddleware``'s ``rerank_model`` is this reranker, and a knowledge base
names it too. Best effort: on any failure, retrieval order.
"""

from __future__ import annotations

import html
import logging
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, field_validator

from .._component import ComponentParameters
from .._document import VectorSearchResult
from .._prompts import DEFAULT_RERANK_PROMPT, checked_rerank_prompt
from .._redact import redact_urls
from ..message import DataBlock, Msg, TextBlock
from ..model import ChatModelBase
from ._base import Query, RerankerBase

# The name its warnings have always had: RAGMiddleware's rerank_model reranks here.
logger = logging.getLogger("ragflow_config.middleware.rag")

Blocks = list[TextBlock | DataBlock]


class LLMReranker(RerankerBase):
    """A chat model picks the most relevant candidates; on any failure, retrieval order.

    In a pipeline file, ``chat_model`` names an entry of ``chat_models``; in
    code, pass the model as ``model``. Candidates keep their retrieval scores:
    the model gives an order, not scores.
    """

    class Parameters(ComponentParameters):
        chat_model: str = Field(
            default="", description="The name of an entry of `chat_models` (pipeline files)."
        )
        rerank_prompt: str = Field(
            default=DEFAULT_RERANK_PROMPT,
            description="Instruction to the model: must contain {query}, may contain {top_k}, "
            "nothing else; literal braces as {{ and }}. The candidates follow it.",
        )

        @field_validator("rerank_prompt")
        @classmethod
        def _query_and_top_k_only(cls, prompt: str) -> str:
            return checked_rerank_prompt(prompt)  # RAGMiddleware's rerank_prompt's check

    parameters: Parameters

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        model: ChatModelBase | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        self.model = model

    async def rerank(
        self, queries: Sequence[Query], candidates: Sequence[VectorSearchResult], top_k: int
    ) -> list[VectorSearchResult]:
        if self.model is None:
            raise RuntimeError("LLMReranker has no chat model: pass model=, or build the pipeline")
        return await rerank(
            self.model, queries, candidates, top_k=top_k, prompt=self.parameters.rerank_prompt
        )


class RerankAnswer(BaseModel):
    """What the rerank model returns."""

    # NOTICE: this description, which the model reads in the answer's schema, is verbatim
    # from AgentScope 2.0.11's _RerankOutput (agentscope/middleware/_rag.py, Apache-2.0).
    ids: list[str | int] = Field(
        description="The ids of the most relevant candidates, in descending "
        "relevance order. Only use ids from the candidate list."
    )


async def rerank(
    model: ChatModelBase,
    queries: Sequence[Query],
    candidates: Sequence[VectorSearchResult],
    *,
    top_k: int,
    prompt: str,
) -> list[VectorSearchResult]:
    """The ``min(top_k, len(candidates))`` best candidates in the model's order.

    Candidates the model cannot read are not shown to it and go last. Ids
    the model repeats or invents are ignored, and readable candidates it
    leaves out follow its choice in vector order. Any failure of the call or
    of its answer logs a warning and keeps the vector order.
    """
    final = min(top_k, len(candidates))
    by_label = {f"c{number}": hit for number, hit in enumerate(candidates, start=1)}
    readable = [label for label, hit in by_label.items() if _readable(model, hit)]
    unreadable = [label for label in by_label if label not in readable]
    if not readable:
        return list(candidates[:final])
    logger.info("reranking %d candidates to %d with %s", len(candidates), final, model.model_name)
    request = _request(
        model,
        queries,
        by_label,
        readable,
        prompt.format(query="\n".join(_texts(queries)), top_k=final),
    )
    try:
        answer = await model.generate_structured_output([request], RerankAnswer)
    except Exception as exc:
        logger.warning(
            "rerank with %s failed, keeping the vector order: %s: %s",
            model.model_name,
            type(exc).__name__,
            redact_urls(str(exc)),  # a client library's error may quote the URL it called
        )
        return list(candidates[:final])
    chosen: list[str] = []
    for raw in answer.ids:
        label = _label(raw)
        if label in readable and label not in chosen:
            chosen.append(label)
    order = chosen + [label for label in readable if label not in chosen] + unreadable
    logger.debug("reranked order: %s", ", ".join(order[:final]))
    return [by_label[label] for label in order[:final]]


def _readable(model: ChatModelBase, hit: VectorSearchResult) -> bool:
    content = hit.chunk.content
    return not isinstance(content, DataBlock) or model.can_read(content)


def _request(
    model: ChatModelBase,
    queries: Sequence[Query],
    by_label: dict[str, VectorSearchResult],
    readable: list[str],
    instruction: str,
) -> Msg:
    blocks: Blocks = [TextBlock(text=instruction)]
    blocks += [q for q in queries if isinstance(q, DataBlock) and model.can_read(q)]
    for label in readable:
        chunk = by_label[label].chunk
        opening = f'<candidate id="{label}" source="{html.escape(chunk.source, quote=True)}">'
        if isinstance(chunk.content, TextBlock):
            blocks.append(TextBlock(text=f"{opening}\n{chunk.content.text}\n</candidate>"))
        else:
            blocks += [TextBlock(text=opening), chunk.content, TextBlock(text="</candidate>")]
    return Msg("user", blocks, "user")


def _label(raw: str | int) -> str:
    """``"c3"``, ``" C3 "``, ``3`` and ``"3"`` all name candidate c3."""
    label = str(raw).strip().lower()
    return f"c{int(label)}" if label.isdigit() else label


def _texts(queries: Sequence[Query]) -> list[str]:
    return [q if isinstance(q, str) else q.text for q in queries if not isinstance(q, DataBlock)]
