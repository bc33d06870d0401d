"""Ollama's embedding models, through Ollama's own client (``POST /api/embed``)."""

from __future__ import annotations

import time
from typing import Any, ClassVar

from pydantic import Field

from .._errors import EmbeddingError
from .._ollama import REQUIRES, OllamaEndpoint, OllamaParameters, from_credential
from ..credential import OllamaCredential
from ..message import DataBlock
from ._base import (
    EmbeddingResponse,
    EmbeddingUsage,
    check_vectors,
)
from ._card import EmbeddingModelCard
from ._remote import RemoteEmbeddingModel, RemoteParameters


class OllamaEmbeddingModel(RemoteEmbeddingModel):
    """An embedding model served by Ollama, e.g. ``nomic-embed-text``.

    As in AgentScope, an :class:`~ragflow_config.credential.OllamaCredential`
    says where the server is: its ``host`` (``http://gpu:11434``) replaces
    ``base_url``. Requests go through the ``ollama`` package, as AgentScope's
    do. No key is sent unless the credential, or ``OLLAMA_API_KEY``, holds one
    (a server behind an authenticating proxy). ``dimensions`` is not sent by
    default: most Ollama models have one fixed size, which ``dimensions`` must
    state. Text only. ``usage.tokens`` is Ollama's ``prompt_eval_count``.
    """

    class Parameters(OllamaParameters, RemoteParameters):  # Ollama's defaults win
        send_dimensions: bool = Field(
            default=False,
            description="Send `dimensions` in the request, for models that can shorten vectors.",
        )
        batch_size: int = Field(default=512, ge=1, description="Texts per request.")

    parameters: Parameters
    requires: ClassVar[dict[str, str]] = REQUIRES
    #: Which models a server has is the server's business (``ollama list``): no cards, as in AgentScope.
    model_cards: ClassVar[tuple[EmbeddingModelCard, ...]] = ()

    _endpoint: OllamaEndpoint

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: OllamaCredential | None = None,
        **options: Any,
    ) -> None:
        parameters = from_credential(credential, parameters, options)
        super().__init__(parameters, **options)
        self._endpoint = OllamaEndpoint(self.parameters, credential, "Ollama embeddings")

    @property
    def host(self) -> str:
        """The Ollama server, as AgentScope's model names it."""
        return self.parameters.host

    async def _call_api(self, inputs: list[str | DataBlock]) -> EmbeddingResponse:
        texts = self._texts(inputs)
        p = self.parameters
        dimensions = p.dimensions if p.send_dimensions else None
        started = time.perf_counter()
        response = await self._endpoint.call(
            lambda client: client.embed(model=p.model, input=texts, dimensions=dimensions),
            error=EmbeddingError,
        )
        vectors = [list(vector) for vector in response.embeddings]
        check_vectors(vectors, len(texts), self.dimensions, service=self.service, model=self.model)
        usage = EmbeddingUsage(
            time=time.perf_counter() - started, tokens=response.prompt_eval_count
        )
        return EmbeddingResponse(embeddings=vectors, usage=usage)
