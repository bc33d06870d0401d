"""Fixtures shared by every test package."""

from __future__ import annotations

import pytest

from ragflow_config.embedding import HashingEmbeddingModel


@pytest.fixture
def hashing_model() -> HashingEmbeddingModel:
    return HashingEmbeddingModel(dimensions=64)
