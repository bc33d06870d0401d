"""What the embedding models that call a service share: their parameters, the service's
name from their endpoint, one request per batch."""

from __future__ import annotations

from typing import ClassVar, Protocol

from pydantic import Field

from .._errors import UnsupportedInputError
from .._http import EndpointOwner, EndpointParameters
from ..message import DataBlock
from ._base import EmbeddingModelBase, EmbeddingParameters


class RemoteParameters(EmbeddingParameters, EndpointParameters):
    """Where a remote embedding model is, and the length of its vectors."""

    # How requests are made, never what a vector is; `base_url` stays in a cache's
    # key: another server may serve other weights under the same model name.
    vector_neutral: ClassVar[frozenset[str]] = (
        EmbeddingParameters.vector_neutral | EndpointParameters.transport_settings
    )

    dimensions: int = Field(ge=1, description="Length of every vector the model returns.")


class _Endpoint(Protocol):
    @property
    def service(self) -> str: ...

    async def aclose(self) -> None: ...


class RemoteEmbeddingModel(EndpointOwner, EmbeddingModelBase):
    """An embedding model behind an endpoint; subclasses implement ``_call_api`` for one batch.

    ``aclose()`` and ``async with`` close the endpoint's client.
    """

    parameters: RemoteParameters
    _endpoint: _Endpoint

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

    def _texts(self, inputs: list[str | DataBlock]) -> list[str]:
        """The batch as texts, for a model or an API that embeds nothing else."""
        texts = [item for item in inputs if isinstance(item, str)]
        if len(texts) != len(inputs):
            raise UnsupportedInputError(
                f"{type(self).__name__}: {self.model!r} embeds text only; got a DataBlock"
            )
        return texts
