"""The embedding model interface: batched, concurrent, order-preserving."""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from pydantic import Field

from .._component import Component, ComponentParameters
from ..message import DataBlock, TextBlock

EmbeddingInput = str | TextBlock | DataBlock


@dataclass
class EmbeddingResponse:
    """The vectors for a call's inputs, in input order."""

    embeddings: list[list[float]]
    tokens: int | None = None
    source: str = field(default="api")


class EmbeddingParameters(ComponentParameters):
    """Options every embedding model has."""

    batch_size: int = Field(default=32, ge=1, description="Inputs per model call.")
    max_concurrency: int = Field(
        default=4, ge=1, description="Batches in flight at once."
    )


class EmbeddingModelBase(Component):
    """Turns texts (and, for multimodal models, data blocks) into vectors.

    Subclasses implement :meth:`embed_batch` for one batch and declare
    ``model`` and ``dimensions``. Calling the model splits the inputs into
    batches of ``batch_size`` and runs up to ``max_concurrency`` at once.
    """

    supports_multimodal: ClassVar[bool] = False
    Parameters: ClassVar[type[ComponentParameters]] = EmbeddingParameters
    parameters: EmbeddingParameters

    @property
    @abstractmethod
    def model(self) -> str:
        """The model's name, as recorded in a collection's fingerprint."""

    @property
    @abstractmethod
    def dimensions(self) -> int:
        """Length of every vector this model returns."""

    @property
    def batch_size(self) -> int:
        return self.parameters.batch_size

    @abstractmethod
    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        """Embed one batch; return one vector per input, in order."""

    async def __call__(self, inputs: Sequence[EmbeddingInput]) -> EmbeddingResponse:
        items = [item.text if isinstance(item, TextBlock) else item for item in inputs]
        if not items:
            return EmbeddingResponse(embeddings=[])
        if not self.supports_multimodal and any(isinstance(i, DataBlock) for i in items):
            raise TypeError(f"{type(self).__name__} embeds text only; got a DataBlock")
        size = self.batch_size
        batches = [items[i : i + size] for i in range(0, len(items), size)]
        limit = asyncio.Semaphore(self.parameters.max_concurrency)

        async def run(batch: list[str | DataBlock]) -> list[list[float]]:
            async with limit:
                vectors = await self.embed_batch(batch)
            if len(vectors) != len(batch):
                raise RuntimeError(
                    f"{type(self).__name__} returned {len(vectors)} vectors for {len(batch)} inputs"
                )
            return vectors

        tasks = [asyncio.ensure_future(run(batch)) for batch in batches]
        try:
            results = await asyncio.gather(*tasks)
        except BaseException:
            # One failed batch fails the call: stop the others instead of leaving them running.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return EmbeddingResponse(embeddings=[vector for part in results for vector in part])
