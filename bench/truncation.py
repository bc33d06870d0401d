"""How many chunks MiniLM truncates: approx_token against the token-counting chunkers.

    python bench/truncation.py

Parses the sample corpus (pipelines/corpus, as pipelines/local.yaml reads it)
and the mixed corpus (as pipelines/mixed-flat.yaml and pipelines/mixed.yaml
read it), chunks each at 256 with an overlap of 32, and counts the chunks
longer than MiniLM's window (256 word pieces, [CLS] and [SEP] included): the
model reads only their first 256.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from ragflow_config.embedding import MiniLMEmbeddingModel
from ragflow_config.message import TextBlock
from ragflow_config.rag import (
    ApproxTokenChunker,
    ChunkerBase,
    HeadingChunker,
    HTMLParser,
    MarkdownParser,
    ParserBase,
    RecordsParser,
    RecursiveChunker,
    Section,
    TextParser,
    TokenChunker,
)

PIPELINES = Path(__file__).parents[1] / "pipelines"
TOKENIZER = MiniLMEmbeddingModel.load_tokenizer()
WINDOW = MiniLMEmbeddingModel.window


def files(folder: Path, suffixes: tuple[str, ...]) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.suffix in suffixes and p.name != "SOURCES.md")


async def parse(paths: list[Path], structured: bool) -> list[Section]:
    sections: list[Section] = []
    for path in paths:
        parser: ParserBase = TextParser()
        if structured:
            parser = {
                ".md": MarkdownParser(),
                ".html": HTMLParser(),
                ".jsonl": RecordsParser(),
            }.get(path.suffix, parser)
        sections += await parser.parse(str(path), path.name)
    return sections


async def report(name: str, sections: list[Section], chunker: ChunkerBase) -> None:
    chunks = await chunker.chunk(sections)
    lengths = [
        len(TOKENIZER.encode(c.content.text).ids)
        for c in chunks
        if isinstance(c.content, TextBlock)
    ]
    cut = sum(length > WINDOW for length in lengths)
    lost = sum(max(0, length - WINDOW) for length in lengths)
    print(f"| {name} | {chunker.chunker_type} | {len(lengths)} | {cut} | {lost} | {max(lengths)} |")


async def main() -> None:
    sample = files(PIPELINES / "corpus", (".md", ".rst", ".txt"))
    mixed = files(PIPELINES / "mixed", (".html", ".jsonl")) + files(
        PIPELINES / "corpus" / "tutorial", (".md",)
    )
    print("| corpus | chunker | chunks | truncated | word pieces cut off | longest |")
    print("|---|---|---|---|---|---|")
    flat_sample = await parse(sample, structured=False)
    for chunker in (
        ApproxTokenChunker(chunk_size=256, overlap=32),
        TokenChunker(chunk_size=256, overlap=32),
        RecursiveChunker(chunk_size=256, overlap=32),
        HeadingChunker(chunk_size=256, overlap=32),
    ):
        await report("sample (text parser)", flat_sample, chunker)
    flat_mixed = await parse(mixed, structured=False)
    await report("mixed (text parser)", flat_mixed, ApproxTokenChunker(chunk_size=256, overlap=32))
    structured_mixed = await parse(mixed, structured=True)
    for chunker in (
        ApproxTokenChunker(chunk_size=256, overlap=32),
        HeadingChunker(chunk_size=256, overlap=32),
    ):
        await report("mixed (structured parsers)", structured_mixed, chunker)


if __name__ == "__main__":
    asyncio.run(main())
