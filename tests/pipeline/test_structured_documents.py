"""Structured documents end to end: the parsers listed before `text` win, chunks cite their headings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragflow_config.cli import main
from ragflow_config.message import TextBlock
from ragflow_config.middleware._rag.format import format_results
from ragflow_config.pipeline import Pipeline, RunOptions
from ragflow_config.rag import Chunk, VectorSearchResult

PIPELINE = """\
version: 1
vector_stores:
  disk: {type: qdrant, parameters: {path: store}}
embeddings:
  hashing: {type: hashing, parameters: {dimensions: 256}}
knowledge_bases:
  - name: docs
    sources: [{path: docs}]
    parsers: PARSERS
    chunker: {type: heading, parameters: {chunk_size: 64}}
    embedding: hashing
    vector_store: disk
    collection: docs
"""
FILES = {
    "guide.md": "# Guide\n\nIntro.\n\n## Install\n\nRun pip install ferret to get the ferret tool.\n",
    "page.html": (
        "<html><head><title>Care</title></head><body><nav>Home Shop Ferrets</nav>"
        "<main><h1>Care</h1><h2>Feeding</h2><p>Feed the otter twice a day.</p></main>"
        "<footer>Copyright</footer></body></html>"
    ),
    "terms.jsonl": '{"term": "weasel", "definition": "A small carnivore."}\n',
}


def project(folder: Path, parsers: str) -> Path:
    (folder / "docs").mkdir()
    for name, text in FILES.items():
        (folder / "docs" / name).write_text(text, encoding="utf-8")
    path = folder / "pipeline.yaml"
    path.write_text(PIPELINE.replace("PARSERS", parsers), encoding="utf-8")
    return path


async def chunks_by_source(path: Path) -> dict[str, list[tuple[list[str], str]]]:
    pipeline = Pipeline.load(path)
    await pipeline.run(options=RunOptions(workers=0))
    found: dict[str, list[tuple[list[str], str]]] = {}
    async with pipeline.build() as built:
        kb = built.knowledge_base("docs")
        for query in ("ferret tool install", "feed otter", "weasel carnivore", "intro guide"):
            for hit in await kb.search([query], top_k=10):
                entry = (hit.chunk.metadata.get("headings"), hit.chunk.content.text)  # type: ignore[union-attr]
                if entry not in found.setdefault(hit.chunk.source, []):
                    found[hit.chunk.source].append(entry)
    return found


async def test_structured_parsers_listed_before_text_read_their_files(tmp_path: Path) -> None:
    path = project(tmp_path, "[{type: markdown}, {type: html}, {type: records}, {type: text}]")
    found = await chunks_by_source(path)

    assert sorted(found["guide.md"]) == [
        (["Guide"], "# Guide\n\nIntro."),
        (["Guide", "Install"], "## Install\n\nRun pip install ferret to get the ferret tool."),
    ]
    assert found["page.html"] == [
        (["Care", "Feeding"], "## Feeding\n\nFeed the otter twice a day.")
    ]
    assert found["terms.jsonl"] == [([], "term: weasel\ndefinition: A small carnivore.")]


async def test_text_listed_first_reads_them_flat(tmp_path: Path) -> None:
    path = project(tmp_path, "[{type: text}, {type: markdown}, {type: html}]")
    found = await chunks_by_source(path)

    assert any("<nav>Home Shop Ferrets</nav>" in text for _, text in found["page.html"])


def test_search_prints_and_the_hint_cites_the_heading_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = str(project(tmp_path, "[{type: markdown}, {type: text}]"))
    assert main(["run", "--workers", "0", path]) == 0
    capsys.readouterr()

    assert main(["search", path, "docs", "ferret tool", "--top-k", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith("guide.md  (chunk 1)  Guide > Install")

    assert main(["search", path, "docs", "ferret tool", "--top-k", "1", "--json"]) == 0
    [hit] = json.loads(capsys.readouterr().out)["hits"]
    assert hit["chunk"]["metadata"]["headings"] == ["Guide", "Install"]

    [block] = format_results([VectorSearchResult.model_validate(hit)])
    assert isinstance(block, TextBlock)
    assert block.text == (
        "[1] (source: guide.md, section: Guide > Install)\n"
        "## Install\n\nRun pip install ferret to get the ferret tool."
    )


def test_the_hint_cites_a_pdf_chunks_page() -> None:
    hit = VectorSearchResult(
        score=0.5,
        document_id="d",
        chunk=Chunk(
            content=TextBlock(text="Revenue grew."),
            source="report.pdf",
            chunk_index=0,
            total_chunks=1,
            metadata={"page": 3},
        ),
    )
    [block] = format_results([hit])
    assert isinstance(block, TextBlock)
    assert block.text == "[1] (source: report.pdf, page: 3)\nRevenue grew."
