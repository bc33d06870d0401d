"""An embedding model that records where, and how many texts at a time, it embeds."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from ragflow_config.embedding import MiniLMEmbeddingModel
from ragflow_config.message import DataBlock

if TYPE_CHECKING:
    from onnxruntime import InferenceSession


class CountingMiniLM(MiniLMEmbeddingModel):
    """``minilm``, counting its batches per process (the driver's count shows whether it
    embedded) and appending each batch's process id and size to ``batch_log``, and
    ``<process id> load`` each time a copy loads its ONNX session."""

    class Parameters(MiniLMEmbeddingModel.Parameters):
        # Where batches are logged changes no vector: runs with and without a log
        # share a fingerprint, as the cache key.
        vector_neutral: ClassVar[frozenset[str]] = (
            MiniLMEmbeddingModel.Parameters.vector_neutral | {"batch_log"}
        )

        batch_log: Path | None = None

    parameters: Parameters
    batches_in_this_process: ClassVar[int] = 0

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        type(self).batches_in_this_process += 1
        if self.parameters.batch_log is not None:
            with self.parameters.batch_log.open("a", encoding="utf-8") as log:
                log.write(f"{os.getpid()} {len(batch)}\n")
        return await super().embed_batch(batch)

    def _load_session(self) -> InferenceSession:
        if self.parameters.batch_log is not None:
            with self.parameters.batch_log.open("a", encoding="utf-8") as log:
                log.write(f"{os.getpid()} load\n")
        return super()._load_session()
