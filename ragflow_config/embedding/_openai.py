"""Embeddings from any server that speaks OpenAI's ``POST /embeddings``.

That covers OpenAI itself, DashScope's compatible mode, vLLM, Ollama's ``/v1``
and Text Embeddings Inference's OpenAI route.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from pydantic import BaseModel, Field, ValidationError

from .._errors import EmbeddingError, UnsupportedInputError
from .._http import (
    ApiKeyCredential,
    EndpointOwner,
    EndpointParameters,
    OpenAIEndpoint,
    unexpected_response,
)
from ..credential import OpenAICredential
from ..message import DataBlock
from ._base import EmbeddingModelBase, EmbeddingParameters, EmbeddingResponse, EmbeddingUsage
from ._card import EmbeddingModelCard

_ApiKeyCredential = ApiKeyCredential


class _EmbeddingItem(BaseModel):
    index: int
    embedding: list[float]


class _Usage(BaseModel):
    total_tokens: int | None = None


class _EmbeddingsBody(BaseModel):
    data: list[_EmbeddingItem]
    usage: _Usage | None = None  # OpenAI and Ollama report it; not every compatible server does


class OpenAICompatibleEmbeddingModel(EndpointOwner, EmbeddingModelBase):
    """Text embeddings from an OpenAI-compatible ``{base_url}/embeddings`` endpoint.

    The API key is ``credential``, or else read from the variable
    ``api_key_env`` when the model is built; it is optional because local
    servers need none, and is sent as ``Authorization: Bearer``. Every vector
    must have ``dimensions`` entries. One HTTP client per instance, opened on
    first use; close it with :meth:`aclose` or ``async with model:``.
    """

    class Parameters(EmbeddingParameters, EndpointParameters):
        # How requests are made; `base_url` stays in a cache's key: another server
        # may serve another model under the same name.
        vector_neutral: ClassVar[frozenset[str]] = EmbeddingParameters.vector_neutral | {
            "timeout",
            "max_retries",
            "api_key_env",
        }

        dimensions: int = Field(ge=1, description="Length of every vector the model returns.")
        send_dimensions: bool = Field(
            default=True,
            description="Send `dimensions` in the request; turn off for servers that reject it.",
        )
        batch_size: int = Field(default=64, ge=1, description="Texts per request.")

    parameters: Parameters
    supports_multimodal: ClassVar[bool] = False
    credential_type: ClassVar[type[_ApiKeyCredential]] = OpenAICredential
    service_label: ClassVar[str] = "OpenAI-compatible embeddings"
    # NOTICE: the cards' facts (names, labels, dimensions, context sizes) are AgentScope
    # 2.0.11's, from agentscope/embedding/_openai/_models/*.yaml
    # (https://github.com/agentscope-ai/agentscope, Apache License 2.0).
    model_cards: ClassVar[tuple[EmbeddingModelCard, ...]] = (
        EmbeddingModelCard(
            name="text-embedding-3-large",
            label="Text Embedding 3 Large",
            dimensions=3072,
            supported_dimensions=[3072, 1536, 1024, 768, 512, 256],
            context_size=8191,
        ),
        EmbeddingModelCard(
            name="text-embedding-3-small",
            label="Text Embedding 3 Small",
            dimensions=1536,
            supported_dimensions=[1536, 1024, 768, 512, 256],
            context_size=8191,
        ),
    )

    _endpoint: OpenAIEndpoint

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: _ApiKeyCredential | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        self._endpoint = OpenAIEndpoint.for_model(
            self.parameters, credential, self.credential_type, self.service_label
        )

    @property
    def model(self) -> str:
        return self.parameters.model

    @property
    def dimensions(self) -> int:
        return self.parameters.dimensions

    @property
    def service(self) -> str:
        """How errors and logs name the remote: never with credentials in the URL."""
        return self._endpoint.service

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        return (await self._call_api(batch)).embeddings

    async def _call_api(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        if not all(isinstance(item, str) for item in inputs):
            raise UnsupportedInputError(f"{type(self).__name__} embeds text only; got a DataBlock")
        p = self.parameters
        payload: dict[str, Any] = {"model": p.model, "input": inputs, "encoding_format": "float"}
        if p.send_dimensions:
            payload["dimensions"] = p.dimensions
        started = time.perf_counter()
        body = await self._endpoint.post(
            "embeddings", payload, error=EmbeddingError, max_retries=p.max_retries
        )
        vectors, tokens = self._vectors(body, expected=len(inputs))
        usage = EmbeddingUsage(time=time.perf_counter() - started, tokens=tokens)
        return EmbeddingResponse(embeddings=vectors, usage=usage)

    def _vectors(self, body: Any, expected: int) -> tuple[list[list[float]], int | None]:
        """The response's vectors in input order, checked for count and length, and its
        total tokens when it reports them."""
        try:
            parsed = _EmbeddingsBody.model_validate(body)
            items = parsed.data
        except ValidationError as exc:
            raise EmbeddingError(unexpected_response(self.service, exc)) from None
        indexes = sorted(item.index for item in items)
        if indexes != list(range(expected)):
            raise EmbeddingError(
                f"{self.service}: sent {expected} texts but the response holds "
                f"{len(items)} vectors with indexes {indexes[:20]}"
            )
        for item in items:
            if len(item.embedding) != self.dimensions:
                raise EmbeddingError(
                    f"{self.service}: model {self.model!r} returned a vector of "
                    f"{len(item.embedding)} dimensions, but dimensions is {self.dimensions}"
                )
        vectors = [item.embedding for item in sorted(items, key=lambda item: item.index)]
        return vectors, parsed.usage.total_tokens if parsed.usage else None


#: AgentScope's name for the OpenAI embedding model; the registered type stays ``openai_compatible``.
OpenAIEmbeddingModel = OpenAICompatibleEmbeddingModel
