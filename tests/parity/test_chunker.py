"""The approx-token chunker against AgentScope 2.0.11's, on hypothesis-generated sections.

Both chunkers get the same sections and parameters. Where the README's table
lists a difference (rows "chunk size" and "chunk boundaries": one fit rule,
cuts at boundaries, pieces stripped), the test checks our documented rule
against AgentScope's output; everything else is compared as it is.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

import pytest

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")

import agentscope.message as their_message
import agentscope.rag as theirs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ragflow_config.message as our_message
import ragflow_config.rag as ours

from ._compare import plain

_WHITESPACE = re.compile(r"\s+")

# Words, spaces, line and paragraph breaks, sentence ends, and any other character.
_token = st.one_of(
    st.sampled_from([" ", "  ", "\n", "\n\n", ". ", "\t", "\uff0c", "ü", "知识库", "🙂"]),
    st.from_regex(r"[A-Za-z]{1,12}", fullmatch=True),
    st.characters(codec="utf-8", exclude_categories=("Cs",)),
)
_texts = st.lists(_token, max_size=120).map("".join)
_metadata = st.dictionaries(
    st.sampled_from(["page", "slide", "sheet", "media_type"]),
    st.one_of(st.integers(1, 9), st.text(max_size=5)),
    max_size=2,
)
_sections = st.lists(
    st.tuples(st.one_of(_texts, st.just(None)), _metadata, st.sampled_from(["a.md", "b.pdf"])),
    max_size=4,
)


@st.composite
def _parameters(draw: st.DrawFn) -> tuple[int, int]:
    chunk_size = draw(st.integers(1, 40))
    return chunk_size, draw(st.integers(0, chunk_size - 1))


def both_sections(spec: list[tuple[str | None, dict[str, Any], str]]) -> tuple[list, list]:
    their_sections, our_sections = [], []
    for content, metadata, source in spec:
        if content is None:
            source_ = {"type": "base64", "data": "aGk=", "media_type": "image/png"}
            their_block: Any = their_message.DataBlock.model_validate({"source": source_})
            our_block: Any = our_message.DataBlock.model_validate({"source": source_})
        else:
            their_block = their_message.TextBlock(text=content)
            our_block = our_message.TextBlock(text=content)
        their_sections.append(theirs.Section(content=their_block, source=source, metadata=metadata))
        our_sections.append(ours.Section(content=our_block, source=source, metadata=metadata))
    return their_sections, our_sections


def chunk_both(spec: list, chunk_size: int, overlap: int) -> tuple[list, list]:
    their_sections, our_sections = both_sections(spec)

    async def run() -> tuple[list, list]:
        their_chunker = theirs.ApproxTokenChunker(
            parameters=theirs.ApproxTokenChunker.Parameters(chunk_size=chunk_size, overlap=overlap)
        )
        our_chunker = ours.ApproxTokenChunker(
            parameters=ours.ApproxTokenChunker.Parameters(chunk_size=chunk_size, overlap=overlap)
        )
        return await their_chunker.chunk(their_sections), await our_chunker.chunk(our_sections)

    their_chunks, our_chunks = asyncio.run(run())
    return plain(their_chunks), plain(our_chunks)


def unnumbered(chunks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**c, "chunk_index": 0, "total_chunks": 0} for c in chunks]


def visible(text: str) -> str:
    return _WHITESPACE.sub("", text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(spec=_sections, sizes=_parameters())
def test_chunks_agree_with_agentscope(spec: list, sizes: tuple[int, int]) -> None:
    chunk_size, overlap = sizes
    their_chunks, our_chunks = chunk_both(spec, chunk_size, overlap)

    # Numbering: 0..N-1 and total N on both sides.
    for chunks in (their_chunks, our_chunks):
        assert [c["chunk_index"] for c in chunks] == list(range(len(chunks)))
        assert {c["total_chunks"] for c in chunks} <= {len(chunks)}

    # Chunks never span sections: chunking each section alone gives the same chunks.
    their_groups, our_groups = [], []
    for section in spec:
        their, our = chunk_both([section], chunk_size, overlap)
        their_groups.append(their)
        our_groups.append(our)
    for chunks, groups in ((their_chunks, their_groups), (our_chunks, our_groups)):
        assert unnumbered(chunks) == unnumbered([c for group in groups for c in group])

    for (content, _, _), their, our in zip(spec, their_groups, our_groups, strict=True):
        if content is None:  # a data block passes through whole, on both sides
            assert our == their and len(our) == 1
            continue
        their_texts = [c["content"]["text"] for c in their]
        our_texts = [c["content"]["text"] for c in our]
        if not content.strip():  # nothing to index on either side
            assert their_texts == our_texts == []
        elif len(content.encode()) // 4 <= chunk_size:
            # README rows "chunk size", "chunk boundaries": a text that fits stays whole
            # on both sides, stripped here.
            assert our_texts == [t.strip() for t in their_texts] == [content.strip()]
        else:
            # Longer texts are split on both sides (AgentScope: 4·chunk_size-byte slices;
            # here at boundaries, stripped, each piece fitting): every piece of each side
            # is text of the section, in order, and with no overlap both cover it exactly.
            assert all(len(t.encode()) // 4 <= chunk_size for t in our_texts)
            assert all(len(t.encode()) <= 4 * chunk_size for t in their_texts)
            assert our_texts and their_texts
            for texts in (their_texts, our_texts):
                assert all(t.strip() and t in content for t in texts)
            assert our_texts[0] == content.lstrip()[: len(our_texts[0])]
            assert content.rstrip().endswith(our_texts[-1])
            assert content.rstrip().endswith(their_texts[-1].rstrip())
            if overlap == 0:
                assert visible("".join(our_texts)) == visible("".join(their_texts))
                assert visible("".join(our_texts)) == visible(content)


def test_parameters_validate_alike() -> None:
    for module in (theirs, ours):
        parameters = module.ApproxTokenChunker.Parameters
        assert (parameters().chunk_size, parameters().overlap) == (512, 50)
        with pytest.raises(ValueError):
            parameters(chunk_size=4, overlap=4)
        with pytest.raises(ValueError):
            parameters(chunk_size=0, overlap=0)
        assert module.ApproxTokenChunker.chunker_type == "approx_token"
    their_schema = theirs.ApproxTokenChunker.Parameters.model_json_schema()["properties"]
    our_schema = ours.ApproxTokenChunker.Parameters.model_json_schema()["properties"]
    keys = ("default", "minimum", "title", "type")
    assert {
        name: {k: p.get(k) for k in keys} for name, p in our_schema.items() if name in their_schema
    } == {name: {k: p.get(k) for k in keys} for name, p in their_schema.items()}
    # The one parameter AgentScope lacks defaults to AgentScope's own way of cutting.
    assert set(our_schema) - set(their_schema) == {"boundaries"}
    assert our_schema["boundaries"]["default"] == "greedy"
