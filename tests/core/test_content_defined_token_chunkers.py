"""``boundaries: content_defined`` on the token and recursive chunkers, counted with MiniLM's tokenizer.

The same rule as approx_token's (``tests/core/test_content_defined_chunking.py``):
an edit changes the chunks around it; the later ones keep their text.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.test_content_defined_chunking import edited, paragraph
from ragflow_config.embedding import MiniLMEmbeddingModel
from ragflow_config.rag import RecursiveChunker, TokenChunker

TOKENIZER = MiniLMEmbeddingModel.load_tokenizer()
SEEDS = range(20)

Chunker = TokenChunker | RecursiveChunker
Make = Callable[[str], Chunker]
CHUNKERS: dict[str, Make] = {
    "token": lambda boundaries: TokenChunker(chunk_size=64, overlap=8, boundaries=boundaries),
    "recursive": lambda boundaries: RecursiveChunker(
        chunk_size=64, overlap=8, boundaries=boundaries
    ),
    "recursive-characters": lambda boundaries: RecursiveChunker(
        unit="characters", chunk_size=256, overlap=32, boundaries=boundaries
    ),
}
# What a chunk of each may hold: MiniLM's word pieces with [CLS] and [SEP], or characters.
FITS: dict[str, Callable[[str], bool]] = {
    "token": lambda text: len(TOKENIZER.encode(text).ids) <= 64,
    "recursive": lambda text: len(TOKENIZER.encode(text).ids) <= 64,
    "recursive-characters": lambda text: len(text) <= 256,
}
each_chunker = pytest.mark.parametrize("name", list(CHUNKERS))


def with_a_paragraph_inserted(rng: random.Random) -> tuple[str, str]:
    """Eight paragraphs, and the same with a new one between the fourth and the fifth."""
    paragraphs = [paragraph(rng, rng.randint(2, 12)) for _ in range(8)]
    return "\n\n".join(paragraphs), "\n\n".join(
        [*paragraphs[:4], paragraph(rng, 3), *paragraphs[4:]]
    )


EDITS = {"sentence": edited, "paragraph": with_a_paragraph_inserted}
# (most, mean) new chunks per edit: a new paragraph of three sentences is itself up to
# two segments, beside the segment it ends early and the one that opens on it.
BOUNDS = {"sentence": (3, 2.0), "paragraph": (5, 3.0)}


def new_chunks(make: Make, boundaries: str, edit: str, seed: int) -> int:
    """Chunks of the edited document its original did not have: what a re-run embeds."""
    before, after = EDITS[edit](random.Random(seed))
    chunker = make(boundaries)
    return len(set(chunker.split(after)) - set(chunker.split(before)))


@pytest.mark.parametrize("make", [TokenChunker, RecursiveChunker])
def test_greedy_stays_the_default(make: type[Chunker]) -> None:
    assert make().parameters.boundaries == "greedy"


@each_chunker
@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edit_re_chunks_only_the_chunks_around_it(name: str, edit: str) -> None:
    """At most the chunks of the segments the edit touches, and the one opening on them."""
    changed = [new_chunks(CHUNKERS[name], "content_defined", edit, seed) for seed in SEEDS]
    most, mean = BOUNDS[edit]
    assert max(changed) <= most, changed
    assert sum(changed) / len(changed) <= mean, changed


@pytest.mark.parametrize("name", ["token", "recursive"])
def test_greedy_packing_in_tokens_moves_the_boundaries_after_an_inserted_sentence(
    name: str,
) -> None:
    greedy = [new_chunks(CHUNKERS[name], "greedy", "sentence", seed) for seed in SEEDS]
    content_defined = [
        new_chunks(CHUNKERS[name], "content_defined", "sentence", seed) for seed in SEEDS
    ]
    assert max(greedy) > 4
    assert sum(greedy) > 2 * sum(content_defined)


@each_chunker
def test_the_chunks_after_the_edit_are_the_chunks_that_were_there(name: str) -> None:
    chunker = CHUNKERS[name]("content_defined")
    for seed in SEEDS:
        before, after = edited(random.Random(seed))
        old, new = chunker.split(before), chunker.split(after)
        last_paragraph = before.rsplit("\n\n", 1)[1]
        kept = [chunk for chunk in old if chunk in last_paragraph]
        assert len(kept) > 2
        assert new[-len(kept) :] == kept


SENTENCES = " ".join(f"Sentence number {n} ends here." for n in range(1, 121))


@pytest.mark.parametrize(
    "chunker",
    [
        TokenChunker(chunk_size=64, overlap=16, boundaries="content_defined"),
        RecursiveChunker(chunk_size=64, overlap=16, boundaries="content_defined"),
        RecursiveChunker(
            unit="characters", chunk_size=120, overlap=40, boundaries="content_defined"
        ),
    ],
    ids=["token", "recursive", "recursive-characters"],
)
def test_neighbouring_chunks_share_whole_sentences_across_the_cuts(chunker: Chunker) -> None:
    """Short sentences fit the overlap, so every chunk opens on the last ones of the one before."""
    chunks = chunker.split(SENTENCES)
    assert len(chunks) > 10
    for before, after in pairwise(chunks):
        first = after.split(". ")[0] + "."
        assert before.endswith(first) or f"{first} " in before, (before, after)
        assert not before.endswith(after.split(". ")[1]), (before, after)


@each_chunker
def test_content_defined_chunks_fit(name: str) -> None:
    chunker = CHUNKERS[name]("content_defined")
    for seed in SEEDS[:10]:
        chunks = chunker.split(edited(random.Random(seed))[1])
        assert all(FITS[name](chunk) for chunk in chunks)
        assert any(not FITS[name](a + " " + b) for a, b in pairwise(chunks))


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.text(alphabet="abé .!?\n", min_size=1, max_size=200), min_size=1, max_size=20),
    st.integers(min_value=8, max_value=48),
    st.sampled_from(["token", "tokens", "characters"]),
    st.booleans(),
)
def test_content_defined_chunks_fit_and_cover_the_text(
    parts: list[str], size: int, kind: str, overlap: bool
) -> None:
    text = "\n\n".join(parts)
    shared = size // 4 if overlap else 0
    chunker: Chunker
    if kind == "token":
        chunker = TokenChunker(chunk_size=size, overlap=shared, boundaries="content_defined")
    else:
        chunker = RecursiveChunker(
            unit=kind, chunk_size=size, overlap=shared, boundaries="content_defined"
        )
    fits = (
        (lambda c: len(c) <= size)
        if kind == "characters"
        else (lambda c: len(TOKENIZER.encode(c).ids) <= size)
    )
    chunks = chunker.split(text)
    assert all(fits(chunk) for chunk in chunks)
    assert all(chunk.strip() == chunk and chunk in text for chunk in chunks)
    visible = "".join(text.split())
    if not visible:
        assert chunks == []
    elif shared:
        assert visible.startswith("".join(chunks[0].split()))
        assert visible.endswith("".join(chunks[-1].split()))
    else:
        assert "".join("".join(chunks).split()) == visible
