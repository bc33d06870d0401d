"""The hashing model, logging every text it embeds, from whichever process embeds it."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import ClassVar

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import DataBlock


class LoggedHashing(HashingEmbeddingModel):
    """``hashing``, appending ``[pid, text]`` lines to ``text_log`` for each text it embeds.

    Parser processes and Ray tasks share no memory with a test: a file is how
    they tell it what they embedded. ``name`` renames the model alone.
    """

    class Parameters(HashingEmbeddingModel.Parameters):
        # Neither changes a vector: the cache must tell names apart by its key's `model`.
        vector_neutral: ClassVar[frozenset[str]] = (
            HashingEmbeddingModel.Parameters.vector_neutral | {"text_log", "name"}
        )
        text_log: Path | None = None
        name: str = "hashing-v1"

    parameters: Parameters

    @property
    def model(self) -> str:
        return self.parameters.name

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        if self.parameters.text_log is not None:
            with self.parameters.text_log.open("a", encoding="utf-8") as log:
                log.writelines(json.dumps([os.getpid(), text]) + "\n" for text in batch)
        return await super().embed_batch(batch)


def logged(text_log: Path) -> list[tuple[int, str]]:
    """What the models logged: (process id, text), in order."""
    if not text_log.exists():
        return []
    lines = text_log.read_text(encoding="utf-8").splitlines()
    return [(pid, text) for pid, text in map(json.loads, lines)]
