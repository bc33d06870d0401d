"""A deterministic, dependency-free embedding model for tests and offline smoke runs."""

from __future__ import annotations

import hashlib
import math
import re
from functools import lru_cache
from itertools import pairwise
from typing import ClassVar

from pydantic import Field

from ..message import DataBlock
from ._base import EmbeddingModelBase, EmbeddingParameters

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbeddingModel(EmbeddingModelBase):
    """Feature hashing of words and word pairs into a fixed-size, L2-normalised vector.

    It is **lexical, not semantic**: texts score high when they share words,
    and paraphrases with different words score low. Use it to test pipelines
    and measure framework cost without a model; use a real model for retrieval.
    """

    class Parameters(EmbeddingParameters):
        dimensions: int = Field(default=256, ge=8, le=8192, description="Vector length.")
        batch_size: int = Field(default=256, ge=1, description="Inputs per model call.")

    parameters: Parameters
    cpu_bound: ClassVar[bool] = True

    @property
    def model(self) -> str:
        return "hashing-v1"

    @property
    def dimensions(self) -> int:
        return self.parameters.dimensions

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        return [self.embed_text(item) for item in batch if isinstance(item, str)]

    def embed_text(self, text: str) -> list[float]:
        words = list(map(str.lower, _WORD.findall(text)))
        # Text without a word (punctuation, emptiness) still gets a unit vector:
        # a zero vector has no cosine and some stores reject it.
        features = words + list(map(" ".join, pairwise(words))) or [text.strip()]
        dimensions = self.dimensions
        # Slots [0, d) count the +1 features, [d, 2d) the -1 ones.
        counts = [0] * (2 * dimensions)
        for slot in map(_slots(dimensions).__getitem__, features):
            counts[slot] += 1
        vector = list(map(int.__sub__, counts[:dimensions], counts[dimensions:]))
        # Never zero: 2n-1 (or 1) features of +-1 cannot all cancel out.
        norm = math.sqrt(sum(x * x for x in vector))
        return [x / norm for x in vector]


class _Slots(dict[str, int]):
    """Feature -> signed slot for one vector length, computed on first sight.

    Bounded: it starts afresh past ``_MAX_CACHED`` features, so a long run over
    a large vocabulary keeps its memory flat.
    """

    def __init__(self, dimensions: int) -> None:
        super().__init__()
        self.dimensions = dimensions

    def __missing__(self, feature: str) -> int:
        if len(self) >= _MAX_CACHED:
            self.clear()
        # blake2b, not hash(): Python's own hash changes between processes.
        value = int.from_bytes(
            hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest(), "little"
        )
        slot = self[feature] = value % self.dimensions + (0 if value >> 63 else self.dimensions)
        return slot


_MAX_CACHED = 1 << 18


@lru_cache(maxsize=8)
def _slots(dimensions: int) -> _Slots:
    return _Slots(dimensions)
