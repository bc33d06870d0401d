"""A chat model as a reranker: the middleware's reranking, named by a knowledge base too."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field, field_validator

from .._component import ComponentParameters
from ..middleware._rag.parameters import DEFAULT_RERANK_PROMPT, RAGParameters
from ..middleware._rag.rerank import rerank
from ..model import ChatModelBase
from ..rag._document import VectorSearchResult
from ._base import Query, RerankerBase


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
        def _as_the_middlewares(cls, prompt: str) -> str:
            RAGParameters(rerank_prompt=prompt)  # one check of the prompt's fields
            return prompt

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
