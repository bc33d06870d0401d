"""The token-counting chunkers (token, heading, recursive) with MiniLM's own tokenizer."""

from __future__ import annotations

import asyncio
import pickle
import re
import shutil
from importlib import resources
from itertools import pairwise
from pathlib import Path

import pytest
from pydantic import ValidationError

from ragflow_config.embedding import MiniLMEmbeddingModel
from ragflow_config.message import DataBlock, TextBlock
from ragflow_config.rag import (
    ApproxTokenChunker,
    Chunk,
    ChunkerBase,
    HeadingChunker,
    MarkdownParser,
    RecursiveChunker,
    Section,
    TextParser,
    TokenChunker,
)

CORPUS = Path(__file__).parents[2] / "pipelines" / "corpus"
# Real prose and code, long enough to need many chunks.
FILES = ["tutorial/controlflow.md", "howto/sorting.rst", "faq/programming.txt"]
TOKENIZER = MiniLMEmbeddingModel.load_tokenizer()


def pieces(text: str) -> int:
    """Word pieces MiniLM reads of ``text``, [CLS] and [SEP] included."""
    return len(TOKENIZER.encode(text).ids)


def corpus_sections() -> list[Section]:
    parser = TextParser()
    return [
        section for name in FILES for section in asyncio.run(parser.parse(str(CORPUS / name), name))
    ]


def chunk(chunker: ChunkerBase, sections: list[Section]) -> list[Chunk]:
    return asyncio.run(chunker.chunk(sections))


def texts(chunks: list[Chunk]) -> list[str]:
    return [c.content.text for c in chunks if isinstance(c.content, TextBlock)]


def words(text: str) -> list[str]:
    return re.findall(r"\w+", text)


def test_no_token_chunk_is_truncated_by_minilm_where_approx_token_chunks_are() -> None:
    sections = corpus_sections()
    approx = texts(chunk(ApproxTokenChunker(chunk_size=256, overlap=32), sections))
    exact = texts(chunk(TokenChunker(chunk_size=256, overlap=32), sections))

    assert sum(pieces(text) > MiniLMEmbeddingModel.window for text in approx) > 0
    assert max(pieces(text) for text in exact) <= MiniLMEmbeddingModel.window
    # Every word of the files is in some chunk, in order.
    joined = " ".join(exact)
    for section in sections:
        assert isinstance(section.content, TextBlock)
        assert set(words(section.content.text)) <= set(words(joined))


def test_the_default_size_is_the_models_window_and_chunks_fill_it() -> None:
    exact = texts(chunk(TokenChunker(), corpus_sections()))
    sizes = [pieces(text) for text in exact]
    assert max(sizes) <= 256
    assert sorted(sizes)[len(sizes) // 2] > 128  # merged up to the window, not cut small


def test_a_tokenizer_file_counts_with_that_file(tmp_path: Path) -> None:
    source = resources.files("ragflow_config.embedding") / "_data"
    target = tmp_path / "tokenizer.json"
    with resources.as_file(source / "all-minilm-l6-v2-tokenizer.json") as path:
        shutil.copy(path, target)
    exact = texts(chunk(TokenChunker(tokenizer_file=target, chunk_size=40), corpus_sections()))
    assert max(pieces(text) for text in exact) <= 40
    assert max(pieces(text) for text in exact) >= 30


def test_sizes_that_cannot_work_are_refused_up_front() -> None:
    with pytest.raises(ValidationError, match="chunk_size is required with tokenizer_file"):
        TokenChunker(tokenizer_file=Path("tokenizer.json"))
    with pytest.raises(ValidationError, match=r"overlap \(64\) must be less than chunk_size"):
        HeadingChunker(chunk_size=64, overlap=64)
    with pytest.raises(ValidationError, match="chunk_size is required when unit is characters"):
        RecursiveChunker(unit="characters")


GUIDE = (
    """\
# Guide

Read this first.

## Install

"""
    + "Install the tool with pip and check its version afterwards. " * 60
    + """

## Usage

Run it.

# Reference

```python
# not a heading
print("hi")
```
"""
)


def test_heading_chunks_never_cross_a_heading_and_carry_their_path() -> None:
    section = Section(content=TextBlock(text=GUIDE), source="guide.md", metadata={"k": 1})
    chunks = chunk(HeadingChunker(), [section])

    paths = [c.metadata["headings"] for c in chunks]
    assert paths[0] == ["Guide"] and paths[-2:] == [["Guide", "Usage"], ["Reference"]]
    install = [c for c in chunks if c.metadata["headings"] == ["Guide", "Install"]]
    assert len(install) >= 3  # one long section, cut to size
    assert all(pieces(text) <= 256 for text in texts(chunks))
    assert all(c.metadata["k"] == 1 for c in chunks)
    for text in texts(chunks):
        assert text.count("Run it.") + text.count("Read this first.") <= 1
    assert "# not a heading" in texts(chunks)[-1]


def test_heading_paths_continue_the_parsers_and_can_open_each_chunk() -> None:
    sections = asyncio.run(MarkdownParser().parse(GUIDE.encode(), "guide.md"))
    chunks = chunk(HeadingChunker(prepend_headings=True), sections)

    install = [c for c in chunks if c.metadata["headings"] == ["Guide", "Install"]]
    assert install, [c.metadata for c in chunks]
    assert all(
        isinstance(c.content, TextBlock) and c.content.text.startswith("Guide > Install\n\n")
        for c in install
    )
    assert all(pieces(text) <= 256 for text in texts(chunks))


SENTENCES = " ".join(f"Sentence number {n} ends here." for n in range(1, 41))


def test_recursive_chunks_end_at_sentences_and_overlap_by_whole_ones() -> None:
    chunker = RecursiveChunker(unit="characters", chunk_size=120, overlap=40)
    chunks = chunker.split(SENTENCES)

    assert all(len(text) <= 120 for text in chunks)
    assert all(text.startswith("Sentence") and text.endswith("ends here.") for text in chunks)
    for before, after in pairwise(chunks):
        last = before.split(". ")[-1]
        assert after.startswith(last.rstrip(".")), (before, after)
    assert " ".join(words(" ".join(chunks))).count("Sentence number 40") >= 1


def test_recursive_chunks_in_tokens_fit_the_window() -> None:
    exact = texts(chunk(RecursiveChunker(overlap=16), corpus_sections()))
    assert max(pieces(text) for text in exact) <= 256


def test_a_word_longer_than_the_chunk_is_cut_between_characters() -> None:
    chunks = RecursiveChunker(unit="characters", chunk_size=10).split("a" * 25 + " b")
    assert chunks == ["a" * 10, "a" * 10, "aaaaa b"]


@pytest.mark.parametrize(
    "chunker", [TokenChunker(), HeadingChunker(), RecursiveChunker()], ids=lambda c: c.chunker_type
)
def test_conventions(chunker: ChunkerBase) -> None:
    image = DataBlock.from_bytes(b"\x89PNG\r\n\x1a\n", "image/png", name="p.png")
    sections = [
        Section(content=TextBlock(text="First. " * 300), source="a.md", metadata={"page": 1}),
        Section(content=image, source="a.md", metadata={"page": 2}),
        Section(content=TextBlock(text="   \n  "), source="a.md"),
        Section(content=TextBlock(text="Last."), source="a.md", metadata={"page": 3}),
    ]
    chunks = chunk(chunker, sections)

    assert [c.chunk_index for c in chunks] == list(range(len(chunks)))
    assert {c.total_chunks for c in chunks} == {len(chunks)}
    assert sum(c.content is image for c in chunks) == 1
    assert [c.metadata["page"] for c in chunks][-2:] == [2, 3]
    assert texts(chunks)[-1] == "Last."


@pytest.mark.parametrize(
    "make",
    [TokenChunker, HeadingChunker, RecursiveChunker],
    ids=["token", "heading", "recursive"],
)
def test_a_chunker_sent_to_a_worker_process_chunks_the_same(make: type[ChunkerBase]) -> None:
    """The runner pickles chunkers to its worker processes, after they may have been used."""
    chunker = make(chunk_size=64)  # type: ignore[call-arg]
    sections = [Section(content=TextBlock(text=GUIDE), source="guide.md")]
    before = chunk(chunker, sections)

    copy = pickle.loads(pickle.dumps(chunker))

    assert [(c.content.text, c.metadata) for c in chunk(copy, sections)] == [  # type: ignore[union-attr]
        (c.content.text, c.metadata)  # type: ignore[union-attr]
        for c in before
    ]
