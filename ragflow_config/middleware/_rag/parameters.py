"""``RAGMiddleware.Parameters``: what a pipeline file's ``middlewares:`` block validates against."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator, model_validator

from ..._component import ComponentParameters
from ..._prompts import (
    DEFAULT_HINT_TEMPLATE,
    DEFAULT_RERANK_PROMPT,
    checked_hint_template,
    checked_rerank_prompt,
)
from ..._search_input import MAX_TOP_K


class RAGParameters(ComponentParameters):
    """How ``RAGMiddleware`` retrieves, reranks and injects knowledge."""

    mode: Literal["static", "agentic"] = Field(
        default="agentic",
        description="static: retrieve with the reply's input before its first reasoning step "
        "and inject the hits as a hint; agentic: offer the model a search_knowledge tool.",
    )
    top_k: int = Field(
        default=5,
        ge=1,
        le=MAX_TOP_K,
        description="Most hits one search returns, after de-duplication across knowledge "
        "bases and queries.",
    )
    score_threshold: float | None = Field(
        default=None,
        description="Drop hits scoring below this; the scale depends on the store and metric "
        "(cosine similarity, dot product, or negated distance). Unset keeps every hit.",
    )
    rerank_candidate_k: int | None = Field(
        default=None,
        ge=1,
        le=MAX_TOP_K,
        description="Candidates the rerank model judges before top_k are kept; at least "
        "top_k; unset means 2 x top_k, at most 50. Ignored without a rerank model.",
    )
    emit_hint_event: bool = Field(
        default=True,
        description="static mode: also emit a HintBlockEvent so a frontend can show the hits.",
    )
    persist_hint: bool = Field(
        default=False,
        description="static mode: keep the injected hint in the conversation instead of "
        "removing it after the reasoning step.",
    )
    hint_template: str = Field(
        default=DEFAULT_HINT_TEMPLATE,
        description="Wraps the retrieved passages in static mode: {context} exactly once, no "
        "other field; write literal braces as {{ and }}.",
    )
    rerank_prompt: str = Field(
        default=DEFAULT_RERANK_PROMPT,
        description="Instruction to the rerank model: must contain {query}, may contain "
        "{top_k}, nothing else; literal braces as {{ and }}. The candidates follow it.",
    )

    @field_validator("hint_template")
    @classmethod
    def _one_context_field(cls, template: str) -> str:
        return checked_hint_template(template)

    @field_validator("rerank_prompt")
    @classmethod
    def _query_and_top_k_only(cls, prompt: str) -> str:
        return checked_rerank_prompt(prompt)

    @model_validator(mode="after")
    def _candidates_cover_top_k(self) -> RAGParameters:
        if self.rerank_candidate_k is not None and self.rerank_candidate_k < self.top_k:
            raise ValueError(
                f"rerank_candidate_k ({self.rerank_candidate_k}) must be at least top_k "
                f"({self.top_k}): the rerank model keeps top_k of the candidates"
            )
        return self

    @property
    def rerank_candidates(self) -> int:
        """How many candidates a rerank model judges."""
        return self.rerank_candidate_k or min(2 * self.top_k, MAX_TOP_K)
