"""approx_token's ``boundaries: content_defined``: chunks after an edit keep their text."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ragflow_config.rag import ApproxTokenChunker

WORDS = [
    "river",
    "mountain",
    "cloud",
    "engine",
    "harbor",
    "lantern",
    "orchard",
    "signal",
    "copper",
    "meadow",
    "falcon",
]


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 30))).capitalize() + "."


def paragraph(rng: random.Random, sentences: int) -> str:
    return " ".join(sentence(rng) for _ in range(sentences))


def chunker(boundaries: str) -> ApproxTokenChunker:
    return ApproxTokenChunker(chunk_size=64, overlap=8, boundaries=boundaries)


def edited(rng: random.Random) -> tuple[str, str]:
    """A document of long paragraphs, and the same with a sentence inserted in the middle one.

    Within a paragraph greedy packing has no paragraph break to fall back on,
    so every later boundary in it moves.
    """
    paragraphs = [[sentence(rng) for _ in range(rng.randint(10, 40))] for _ in range(4)]
    middle = paragraphs[2]
    edited = [*paragraphs[:2], [*middle[:5], sentence(rng), *middle[5:]], *paragraphs[3:]]
    return (
        "\n\n".join(" ".join(p) for p in paragraphs),
        "\n\n".join(" ".join(p) for p in edited),
    )


def new_chunks(boundaries: str, seed: int) -> tuple[int, int]:
    """(chunks of the edited document not in the original, chunks of the original)."""
    before, after = edited(random.Random(seed))
    old = chunker(boundaries).split(before)
    return len(set(chunker(boundaries).split(after)) - set(old)), len(old)


def test_greedy_is_the_default_and_content_defined_is_validated() -> None:
    assert ApproxTokenChunker().parameters.boundaries == "greedy"
    with pytest.raises(ValidationError):
        ApproxTokenChunker(boundaries="fixed")


def test_an_inserted_paragraph_changes_only_the_chunks_around_it() -> None:
    changed = [new_chunks("content_defined", seed) for seed in range(40)]
    assert all(new <= 4 for new, _ in changed), changed
    assert sum(new for new, _ in changed) / len(changed) <= 3
    # Greedy packing resynchronises too, at a sentence end, but later and not always.
    greedy = [new_chunks("greedy", seed) for seed in range(40)]
    assert max(new for new, _ in greedy) > 4
    assert sum(new for new, _ in greedy) > sum(new for new, _ in changed)


def test_the_chunks_after_the_edit_are_the_chunks_that_were_there() -> None:
    for seed in range(40):
        before, after = edited(random.Random(seed))
        old, new = chunker("content_defined").split(before), chunker("content_defined").split(after)
        last_paragraph = before.rsplit("\n\n", 1)[1]
        kept = [chunk for chunk in old if chunk in last_paragraph]
        assert len(kept) > 2
        assert new[-len(kept) :] == kept


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.text(alphabet="abc .!?\n", min_size=1, max_size=200), min_size=1, max_size=30),
    st.integers(min_value=4, max_value=64),
)
def test_content_defined_chunks_fit_and_cover_the_text(parts: list[str], size: int) -> None:
    text = "\n\n".join(parts)
    pieces = ApproxTokenChunker(chunk_size=size, overlap=size // 4, boundaries="content_defined")
    chunks = pieces.split(text)
    assert all(len(piece.encode("utf-8")) // 4 <= size for piece in chunks)
    assert all(piece.strip() == piece and piece for piece in chunks)
    assert set("".join(text.split())) == set("".join("".join(chunks).split()))
