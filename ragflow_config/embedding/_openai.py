"""Embeddings from any server that speaks OpenAI's ``POST /embeddings``.

That covers OpenAI itself, DashScope's compatible mode, vLLM, Ollama's ``/v1``
and Text Embeddings Inference's OpenAI route.
"""

from __future__ import annotations

import time
from typing import Any, ClassVar

from pydantic import Field

from .._errors import EmbeddingError
from .._http import ApiKeyCredential
from .._openai import REQUIRES, OpenAIEndpoint
from ..credential import OpenAICredential
from ..message import DataBlock
from ._base import (
    EmbeddingResponse,
    EmbeddingUsage,
    check_vectors,
)
from ._card import EmbeddingModelCard
from ._remote import RemoteEmbeddingModel, RemoteParameters

_ApiKeyCredential = ApiKeyCredential


class OpenAICompatibleEmbeddingModel(RemoteEmbeddingModel):
    """Text embeddings from an OpenAI-compatible ``{base_url}/embeddings`` endpoint.

    The API key is ``credential``, or else read from the variable
    ``api_key_env`` when the model is built; it is optional because local
    servers need none, and is sent as ``Authorization: Bearer``. Requests go
    through the ``openai`` SDK, as AgentScope's do. Every vector must have
    ``dimensions`` entries. One client per instance, opened on first use;
    close it with :meth:`aclose` or ``async with model:``.
    """

    class Parameters(RemoteParameters):
        send_dimensions: bool = Field(
            default=True,
            description="Send `dimensions` in the request; turn off for servers that reject it.",
        )
        batch_size: int = Field(default=64, ge=1, description="Texts per request.")

    parameters: Parameters
    requires: ClassVar[dict[str, str]] = REQUIRES
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
        pass_dimensions: bool | None = None,
        **options: Any,
    ) -> None:
        if pass_dimensions is not None:  # AgentScope's name of `send_dimensions`
            options["send_dimensions"] = pass_dimensions
        super().__init__(parameters, **options)
        self._endpoint = OpenAIEndpoint.for_model(
            self.parameters, credential, self.credential_type, self.service_label
        )

    async def _call_api(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        texts = self._texts(inputs)
        p = self.parameters
        request: dict[str, Any] = {"model": p.model, "input": texts, "encoding_format": "float"}
        if p.send_dimensions:
            request["dimensions"] = p.dimensions
        started = time.perf_counter()
        response = await self._endpoint.call(
            lambda client, headers: client.embeddings.create(**request, extra_headers=headers),
            error=EmbeddingError,
            max_retries=p.max_retries,
            retry_delay=p.retry_delay,
        )
        vectors = self._vectors(response, expected=len(texts))
        usage = EmbeddingUsage(time=time.perf_counter() - started, tokens=_total_tokens(response))
        return EmbeddingResponse(embeddings=vectors, usage=usage)

    def _vectors(self, response: Any, expected: int) -> list[list[float]]:
        """The response's vectors in input order, checked for count and length.

        Read by attribute, as the SDK returns them; a compatible server that
        leaves out an item's ``index`` is read in order.
        """
        items = getattr(response, "data", None)
        if not isinstance(items, list):
            raise EmbeddingError(f"{self.service}: unexpected response: no list of embeddings")
        by_index: dict[int, list[float]] = {}
        for position, item in enumerate(items):
            index = getattr(item, "index", position)
            vector = getattr(item, "embedding", None)
            if not isinstance(vector, list) or not all(isinstance(x, int | float) for x in vector):
                raise EmbeddingError(
                    f"{self.service}: unexpected response: data.{position}.embedding "
                    "is not a list of numbers"
                )
            by_index[index if isinstance(index, int) else position] = vector
        if len(items) == expected and sorted(by_index) != list(range(expected)):
            raise EmbeddingError(
                f"{self.service}: sent {expected} texts but the response's vectors have "
                f"indexes {sorted(by_index)[:20]}"
            )
        vectors = [by_index[i] for i in sorted(by_index)]
        check_vectors(vectors, expected, self.dimensions, service=self.service, model=self.model)
        return vectors


def _total_tokens(response: Any) -> int | None:
    """The tokens the service counted, when it says (not every compatible server does)."""
    tokens = getattr(getattr(response, "usage", None), "total_tokens", None)
    return tokens if isinstance(tokens, int) else None


#: AgentScope's name for the OpenAI embedding model; the registered type stays ``openai_compatible``.
OpenAIEmbeddingModel = OpenAICompatibleEmbeddingModel
