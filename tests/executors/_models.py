"""An embedding model that counts the batches it embeds in this process."""

from __future__ import annotations

from typing import ClassVar

from ragflow_config.embedding import MiniLMEmbeddingModel
from ragflow_config.message import DataBlock


class CountingMiniLM(MiniLMEmbeddingModel):
    """``minilm``, counting its batches per process: the driver's count shows whether it embedded."""

    batches_in_this_process: ClassVar[int] = 0

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        type(self).batches_in_this_process += 1
        return await super().embed_batch(batch)
