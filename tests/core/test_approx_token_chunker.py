"""ApproxTokenChunker: the fit rule, multibyte safety, overlap, word boundaries, conventions."""

from __future__ import annotations

import asyncio
import re
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from ragflow_config.message import DataBlock, TextBlock
from ragflow_config.rag import ApproxTokenChunker, Chunk, Section

CJK = "猫は一日に十二時間から十六時間眠ります。犬はもっと短い時間しか眠りません。" * 6
EMOJI = "🐱😺👩‍👩‍👧‍👦👍🏽🇯🇵" * 20  # 4-byte code points, ZWJ sequences, modifiers, flags
COMBINING = "e\u0301a\u0300o\u0308n\u0303" * 40  # base letters with combining marks
MIXED = "Cats 猫 sleep 😴 a lot — très souvent, e\u0301 " * 15


def fits(piece: str, chunk_size: int) -> bool:
    return len(piece.encode("utf-8")) // 4 <= chunk_size


def split(text: str, chunk_size: int, overlap: int) -> list[str]:
    chunker = ApproxTokenChunker(chunk_size=chunk_size, overlap=overlap)
    chunks = asyncio.run(chunker.chunk([Section(content=TextBlock(text=text), source="t")]))
    return [chunk.content.text for chunk in chunks]


def spans(text: str, pieces: list[str]) -> list[tuple[int, int]]:
    """Where each piece lies in ``text``; pieces advance, so each is searched after the last."""
    found: list[tuple[int, int]] = []
    position = 0
    for piece in pieces:
        start = text.find(piece, position)
        assert start >= 0, f"{piece!r} is not in the text after position {position}"
        found.append((start, start + len(piece)))
        position = start + 1
    return found


def numbered_words(count: int) -> str:
    """Short, unique words, so every piece has exactly one place in the text."""
    return " ".join(f"w{i:04d}" for i in range(count))


def assert_sound_pieces(text: str, pieces: list[str], chunk_size: int) -> None:
    for piece in pieces:
        assert fits(piece, chunk_size), piece
        assert piece.encode("utf-8").decode("utf-8") == piece
        assert piece in text
        assert piece and piece == piece.strip()


# --- the fit rule ---


@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7, 16, 64])
@pytest.mark.parametrize("overlap_ratio", [0.0, 0.5])
@pytest.mark.parametrize("text", [CJK, EMOJI, COMBINING, MIXED, numbered_words(200)])
def test_every_piece_fits_and_is_a_clean_substring(
    text: str, chunk_size: int, overlap_ratio: float
) -> None:
    overlap = int(chunk_size * overlap_ratio)
    pieces = split(text, chunk_size, overlap)
    assert len(pieces) > 1
    assert_sound_pieces(text, pieces, chunk_size)
    assert text.strip().startswith(pieces[0])
    assert text.strip().endswith(pieces[-1])


def test_the_fit_rule_decides_whether_text_is_split_at_all() -> None:
    # chunk_size 2: up to 4*2+3 = 11 bytes is 2 tokens by the floor rule.
    assert split("a" * 11, chunk_size=2, overlap=0) == ["a" * 11]
    assert split("a" * 12, chunk_size=2, overlap=0) == ["a" * 11, "a"]
    assert split("猫" * 3, chunk_size=2, overlap=0) == ["猫" * 3]  # 9 bytes
    assert split("猫" * 4, chunk_size=2, overlap=0) == ["猫" * 3, "猫"]  # 12 bytes


# --- cuts, overlap and boundaries ---


@pytest.mark.parametrize("text", [CJK, EMOJI, COMBINING])
def test_without_overlap_and_whitespace_the_pieces_rebuild_the_text(text: str) -> None:
    pieces = split(text, chunk_size=5, overlap=0)
    assert "".join(pieces) == text


@pytest.mark.parametrize("text", [CJK, EMOJI])
def test_overlap_without_whitespace_is_overlap_tokens_to_within_a_character(text: str) -> None:
    chunk_size, overlap = 12, 4
    pieces = split(text, chunk_size, overlap)
    located = spans(text, pieces)
    for (_, end), (next_start, _) in pairwise(located):
        shared = len(text[next_start:end].encode("utf-8"))
        assert overlap * 4 - 3 <= shared <= overlap * 4


@pytest.mark.parametrize(("chunk_size", "overlap"), [(8, 2), (16, 4), (32, 8), (64, 16)])
def test_overlap_between_word_pieces_is_about_overlap_tokens(chunk_size: int, overlap: int) -> None:
    text = numbered_words(300)  # 5-character words
    pieces = split(text, chunk_size, overlap)
    located = spans(text, pieces)
    for (_, end), (next_start, _) in pairwise(located):
        shared = text[next_start:end]
        # Moving to a word start may skip at most one word and its space.
        assert overlap * 4 - 6 <= len(shared) <= overlap * 4, shared
        assert shared.strip()


@pytest.mark.parametrize(("chunk_size", "overlap"), [(2, 0), (2, 1), (3, 2), (8, 3), (25, 10)])
def test_pieces_start_and_end_on_word_boundaries(chunk_size: int, overlap: int) -> None:
    text = " ".join(f"{word}{i}" for i, word in enumerate(["a", "bb", "ccc", "dd"] * 40))
    pieces = split(text, chunk_size, overlap)
    for start, end in spans(text, pieces):
        assert start == 0 or text[start - 1] == " ", text[start - 1 : end]
        assert end == len(text) or text[end] == " ", text[start : end + 1]


def test_a_paragraph_break_is_preferred_to_a_space() -> None:
    paragraphs = [numbered_words(20), " ".join(f"x{i:04d}" for i in range(20))]
    text = "\n\n".join(paragraphs)  # each paragraph is 119 bytes, 29 tokens
    assert split(text, chunk_size=40, overlap=0) == paragraphs


def test_a_piece_ending_exactly_at_a_space_keeps_its_last_word() -> None:
    # With chunk_size 2 the slicing budget is 11 bytes: "abcde fghij" fits exactly.
    text = "abcde fghij klmno pqrst"
    assert split(text, chunk_size=2, overlap=0) == ["abcde fghij", "klmno pqrst"]


# --- conventions of chunk() ---


async def test_sections_are_never_merged_and_indexes_run_across_them() -> None:
    image = DataBlock.from_bytes(b"\x89PNG\r\n\x1a\n", "image/png", name="slide.png")
    sections = [
        Section(
            content=TextBlock(text=numbered_words(60)), source="deck.pptx", metadata={"slide": 1}
        ),
        Section(content=TextBlock(text="   \n\t  "), source="deck.pptx", metadata={"slide": 2}),
        Section(content=image, source="deck.pptx", metadata={"slide": 3}),
        Section(content=TextBlock(text=""), source="deck.pptx", metadata={"slide": 4}),
        Section(
            content=TextBlock(text="Short closing slide."),
            source="deck.pptx",
            metadata={"slide": 5, "tags": ["end"]},
        ),
    ]
    chunks = await ApproxTokenChunker(chunk_size=16, overlap=4).chunk(sections)

    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.total_chunks for c in chunks} == {len(chunks)}
    slides = [c.metadata["slide"] for c in chunks]
    assert slides == sorted(slides) and set(slides) == {1, 3, 5}  # blank sections dropped
    first_slide = [c.content.text for c in chunks if c.metadata["slide"] == 1]
    assert len(first_slide) > 1
    assert all(text in sections[0].content.text for text in first_slide)
    [image_chunk] = [c for c in chunks if c.metadata["slide"] == 3]
    assert image_chunk.content == image
    assert chunks[-1].content.text == "Short closing slide."
    assert all(c.source == "deck.pptx" for c in chunks)

    # Metadata is copied, not shared with the section.
    chunks[-1].metadata["tags"] = ["changed"]
    chunks[0].metadata["slide"] = 99
    assert sections[0].metadata == {"slide": 1}
    assert sections[4].metadata == {"slide": 5, "tags": ["end"]}


async def test_small_sections_stay_whole_and_separate() -> None:
    sections = [
        Section(content=TextBlock(text="  first  "), source="a.md"),
        Section(content=TextBlock(text="second"), source="a.md"),
    ]
    chunks = await ApproxTokenChunker().chunk(sections)
    assert [(c.content.text, c.chunk_index, c.total_chunks) for c in chunks] == [
        ("first", 0, 2),
        ("second", 1, 2),
    ]


async def test_nothing_in_nothing_out() -> None:
    assert await ApproxTokenChunker().chunk([]) == []


# --- Parameters ---


def test_parameters_defaults_and_accessors() -> None:
    chunker = ApproxTokenChunker(
        parameters=ApproxTokenChunker.Parameters(chunk_size=256, overlap=32)
    )
    assert (chunker.chunk_size, chunker.overlap) == (256, 32)
    assert ApproxTokenChunker.chunker_type == "approx_token"
    assert ApproxTokenChunker().parameters == ApproxTokenChunker.Parameters(
        chunk_size=512, overlap=50
    )


@pytest.mark.parametrize(
    ("options", "complaint"),
    [
        ({"chunk_sze": 10}, "chunk_sze"),
        ({"chunk_size": 10, "overlap": 10}, r"overlap \(10\) must be less than chunk_size \(10\)"),
        ({"chunk_size": 10, "overlap": 11}, "overlap"),
        ({"chunk_size": 0}, "chunk_size"),
        ({"chunk_size": -5}, "chunk_size"),
        ({"overlap": -1}, "overlap"),
    ],
)
def test_parameters_reject_bad_options(options: dict[str, int], complaint: str) -> None:
    with pytest.raises(ValidationError, match=complaint):
        ApproxTokenChunker.Parameters(**options)
    with pytest.raises(ValidationError, match=complaint):
        ApproxTokenChunker(**options)


def test_parameters_json_schema_declares_the_constraints() -> None:
    schema = ApproxTokenChunker.Parameters.model_json_schema()
    assert schema["additionalProperties"] is False
    assert schema["properties"]["chunk_size"]["minimum"] == 1
    assert schema["properties"]["overlap"]["minimum"] == 0
    assert schema["properties"]["chunk_size"]["default"] == 512
    assert schema["properties"]["overlap"]["default"] == 50
    assert schema["properties"]["chunk_size"]["description"]


def test_parameters_must_be_the_model_not_a_dict() -> None:
    with pytest.raises(TypeError, match=r"ApproxTokenChunker\.Parameters"):
        ApproxTokenChunker(parameters={"chunk_size": 10, "overlap": 2})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="not both"):
        ApproxTokenChunker(parameters=ApproxTokenChunker.Parameters(), chunk_size=10)
    with pytest.raises(ValidationError, match="frozen"):
        ApproxTokenChunker().parameters.chunk_size = 3  # type: ignore[misc]


# --- properties on random text ---

# Plenty of separators among arbitrary code points (any UTF-8 width, no surrogates).
random_text = st.lists(
    st.one_of(
        st.sampled_from([" ", " ", "\n", "\n\n", ". ", "\t"]),
        st.characters(codec="utf-8"),
        st.characters(codec="utf-8", min_codepoint=0x10000),
    ),
    max_size=250,
).map("".join)


@st.composite
def sizes(draw: st.DrawFn, min_chunk_size: int = 1) -> tuple[int, int]:
    chunk_size = draw(st.integers(min_value=min_chunk_size, max_value=30))
    return chunk_size, draw(st.integers(min_value=0, max_value=chunk_size - 1))


@settings(max_examples=150, deadline=None, database=None)
@given(texts=st.lists(random_text, min_size=1, max_size=3), size=sizes())
def test_chunk_invariants_hold_on_random_unicode(texts: list[str], size: tuple[int, int]) -> None:
    chunk_size, overlap = size
    sections = [
        Section(content=TextBlock(text=t), source="r.txt", metadata={"n": n})
        for n, t in enumerate(texts)
    ]
    chunks: list[Chunk] = asyncio.run(
        ApproxTokenChunker(chunk_size=chunk_size, overlap=overlap).chunk(sections)
    )

    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert all(c.total_chunks == len(chunks) for c in chunks)
    for n, text in enumerate(texts):
        pieces = [c.content.text for c in chunks if c.metadata == {"n": n}]
        assert bool(pieces) == bool(text.strip())
        assert_sound_pieces(text, pieces, chunk_size)
        if pieces:
            assert text.strip().startswith(pieces[0])
            assert text.strip().endswith(pieces[-1])
            if overlap == 0:  # nothing but whitespace is lost between pieces
                assert re.sub(r"\s", "", "".join(pieces)) == re.sub(r"\s", "", text)


@settings(max_examples=100, deadline=None, database=None)
@given(
    lengths=st.lists(st.integers(min_value=1, max_value=4), min_size=1, max_size=120),
    size=sizes(min_chunk_size=3),
)
def test_short_words_are_never_cut_on_random_text(
    lengths: list[int], size: tuple[int, int]
) -> None:
    # Words of at most 7 characters (letters, then a unique number), so half of the
    # 15-byte minimum budget always holds a space.
    text = " ".join(f"{'x' * length}{i}" for i, length in enumerate(lengths))
    chunk_size, overlap = size
    pieces = split(text, chunk_size, overlap)
    assert_sound_pieces(text, pieces, chunk_size)
    for start, end in spans(text, pieces):
        assert start == 0 or text[start - 1] == " "
        assert end == len(text) or text[end] == " "
