"""HashingEmbeddingModel: deterministic, unit-length, lexical, order-preserving."""

from __future__ import annotations

import itertools
import math

import pytest
from pydantic import ValidationError

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import DataBlock, TextBlock

TEXTS = [
    "Cats sleep twelve to sixteen hours a day.",
    "Cats sleep in the sun all day long.",
    "Quarterly revenue grew by four percent.",
    "猫は一日に十二時間眠ります。",
    "!!! ??? ...",
    "",
    "Dogs bark.",
]


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_vectors_are_deterministic_across_instances() -> None:
    first = await HashingEmbeddingModel(dimensions=128)(TEXTS)
    second = await HashingEmbeddingModel(dimensions=128, batch_size=3)(TEXTS)
    assert first.embeddings == second.embeddings
    assert all(len(vector) == 128 for vector in first.embeddings)
    other_size = await HashingEmbeddingModel(dimensions=64)(TEXTS[:1])
    assert len(other_size.embeddings[0]) == 64


async def test_every_vector_has_unit_length() -> None:
    response = await HashingEmbeddingModel(dimensions=64)(TEXTS)
    for text, vector in zip(TEXTS, response.embeddings, strict=True):
        assert math.fsum(x * x for x in vector) == pytest.approx(1.0), text


async def test_texts_sharing_words_score_higher_than_unrelated_ones() -> None:
    model = HashingEmbeddingModel(dimensions=256)
    cats_a, cats_b, revenue = (await model(TEXTS[:3])).embeddings
    assert cosine(cats_a, cats_b) > cosine(cats_a, revenue) + 0.2
    assert cosine(cats_a, cats_a) == pytest.approx(1.0)
    # Lexical: case and punctuation do not matter, word choice does.
    (same,) = (await model(["CATS sleep twelve to sixteen hours a day"])).embeddings
    assert cosine(cats_a, same) == pytest.approx(1.0)


async def test_batching_preserves_input_order() -> None:
    texts = [f"document number {i} about topic {i % 3}" for i in range(23)]
    whole = await HashingEmbeddingModel(dimensions=64, batch_size=256)(texts)
    batched = await HashingEmbeddingModel(dimensions=64, batch_size=4, max_concurrency=3)(texts)
    model = HashingEmbeddingModel(dimensions=64)
    assert batched.embeddings == whole.embeddings
    assert whole.embeddings == [model.embed_text(text) for text in texts]


async def test_text_blocks_embed_like_their_text_and_data_blocks_are_refused() -> None:
    model = HashingEmbeddingModel(dimensions=64)
    as_block, as_str = (await model([TextBlock(text="cats sleep"), "cats sleep"])).embeddings
    assert as_block == as_str
    assert (await model([])).embeddings == []
    with pytest.raises(TypeError, match="text only"):
        await model([DataBlock.from_bytes(b"\x89PNG", "image/png")])
    with pytest.raises(ValueError, match="text only"):  # what AgentScope's models raise
        await model(["cats", DataBlock.from_bytes(b"\x89PNG", "image/png")])


def test_identity_and_parameters() -> None:
    model = HashingEmbeddingModel(dimensions=64)
    assert (model.model, model.dimensions, model.supports_multimodal) == ("hashing-v1", 64, False)
    assert HashingEmbeddingModel().dimensions == 256
    for bad in ({"dimensions": 4}, {"dimensions": 10_000}, {"batch_size": 0}, {"dims": 64}):
        with pytest.raises(ValidationError):
            HashingEmbeddingModel(**bad)


def _reference_vector(text: str, dimensions: int) -> list[float]:
    """The documented algorithm, written plainly: every vector must equal it exactly."""
    import hashlib
    import re

    words = [word.lower() for word in re.findall(r"\w+", text)]
    features = words + [f"{a} {b}" for a, b in itertools.pairwise(words)] or [text.strip()]
    vector = [0.0] * dimensions
    for feature in features:
        value = int.from_bytes(hashlib.blake2b(feature.encode(), digest_size=8).digest(), "little")
        vector[value % dimensions] += 1.0 if value >> 63 else -1.0
    norm = math.sqrt(sum(x * x for x in vector))
    return [x / norm for x in vector]


@pytest.mark.parametrize("dimensions", [8, 64, 256])
async def test_vectors_equal_the_documented_feature_hashing(dimensions: int) -> None:
    texts = [*TEXTS, "İstanbul ÇAY straße", "the the the the", "a b a b a b " * 50]
    response = await HashingEmbeddingModel(dimensions=dimensions)(texts)
    assert response.embeddings == [_reference_vector(text, dimensions) for text in texts]


async def test_a_used_model_pickles_for_another_process() -> None:
    import pickle

    model = HashingEmbeddingModel(dimensions=32)
    first = (await model(["cats sleep"])).embeddings
    copy = pickle.loads(pickle.dumps(model))
    assert copy.parameters == model.parameters
    assert (await copy(["cats sleep"])).embeddings == first
