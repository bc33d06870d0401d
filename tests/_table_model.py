"""An embedding model that maps each known text to a chosen vector: scores computable by hand."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from ragflow_config.embedding._base import EmbeddingModelBase, EmbeddingParameters
from ragflow_config.message import DataBlock


class TableModel(EmbeddingModelBase):
    """Each text of ``vectors`` embeds to its vector; any other text is a ``KeyError``."""

    Parameters: ClassVar[type[EmbeddingParameters]] = EmbeddingParameters

    def __init__(self, vectors: Mapping[str, list[float]]) -> None:
        super().__init__()
        self._vectors = dict(vectors)
        self._dimensions = len(next(iter(self._vectors.values())))

    @property
    def model(self) -> str:
        return "table"

    @property
    def dimensions(self) -> int:
        return self._dimensions

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        return [self._vectors[item] for item in batch if isinstance(item, str)]
