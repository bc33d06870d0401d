"""Rerankers behind an HTTP ``/rerank`` API: Text Embeddings Inference, Jina, Cohere."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, TypeAdapter, ValidationError

from .._errors import RagflowError
from .._http import EndpointOwner, EndpointParameters, JSONEndpoint, unexpected_response
from ._base import RerankerBase


class RerankError(RagflowError):
    """A reranking service failed or answered with something unusable."""


class _TeiHit(BaseModel):
    index: int
    score: float


_TeiHits = TypeAdapter(list[_TeiHit])


class _CohereHit(BaseModel):
    index: int
    relevance_score: float


class _CohereBody(BaseModel):
    results: list[_CohereHit]


class HttpReranker(EndpointOwner, RerankerBase):
    """Scores from a ``POST {base_url}/rerank`` endpoint.

    ``api: tei`` is Hugging Face Text Embeddings Inference (``{"query",
    "texts"}`` -> ``[{"index", "score"}]``); ``api: cohere`` is the form Cohere
    and Jina share (``{"model", "query", "documents", "top_n"}`` ->
    ``{"results": [{"index", "relevance_score"}]}``; ``base_url`` is
    ``https://api.jina.ai/v1`` or ``https://api.cohere.com/v2``). The API key comes only from the variable ``api_key_env`` and is
    sent as ``Authorization: Bearer``; local servers need none.
    """

    class Parameters(EndpointParameters):
        api: Literal["tei", "cohere"] = Field(
            default="tei", description="The wire format: `tei`, or `cohere` (also Jina's)."
        )
        base_url: str = Field(
            pattern=r"^https?://",
            description="The API root: `http://host:8080` for TEI, `https://api.cohere.com/v2` "
            "or `https://api.jina.ai/v1`.",
        )
        model: str = Field(
            default="default", min_length=1, description="The model's name (ignored by TEI)."
        )
        api_key_env: str = Field(
            default="RERANK_API_KEY",
            description="Environment variable holding the API key, if the server needs one.",
        )

    parameters: Parameters

    _endpoint: JSONEndpoint

    def __init__(self, parameters: Parameters | None = None, **options: Any) -> None:
        super().__init__(parameters, **options)
        p = self.parameters
        # Only the named variable: a credential class would also read OPENAI_API_KEY,
        # and send that key to whatever server reranks.
        key = os.environ.get(p.api_key_env)
        self._endpoint = JSONEndpoint(
            p.base_url,
            SecretStr(key) if key else None,
            p.timeout,
            f"{p.api} reranker ({p.model})",
            p.api_key_env,
        )

    async def scores(self, query: str, passages: Sequence[str]) -> list[float]:
        if not passages:
            return []
        p = self.parameters
        payload: dict[str, Any] = (
            {"query": query, "texts": list(passages)}
            if p.api == "tei"
            else {"model": p.model, "query": query, "documents": list(passages)}
            | {"top_n": len(passages)}
        )
        body = await self._endpoint.post(
            "rerank",
            payload,
            error=RerankError,
            max_retries=p.max_retries,
            retry_delay=p.retry_delay,
        )
        try:
            hits = (
                [(h.index, h.score) for h in _TeiHits.validate_python(body)]
                if p.api == "tei"
                else [
                    (h.index, h.relevance_score) for h in _CohereBody.model_validate(body).results
                ]
            )
        except ValidationError as exc:
            raise RerankError(unexpected_response(self._endpoint.service, exc)) from None
        by_index = dict(hits)
        if sorted(by_index) != list(range(len(passages))):
            raise RerankError(
                f"{self._endpoint.service}: sent {len(passages)} passages but the response "
                f"scores indexes {sorted(by_index)[:20]}"
            )
        return [by_index[i] for i in range(len(passages))]
