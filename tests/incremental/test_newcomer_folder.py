"""Issue 52, items 5 and 3: a folder of real files, some of which yield nothing.

The folder holds real PDFs and HTML pages beside a password-protected PDF and
spreadsheet, a truncated PDF and an empty file. Files that yield nothing are
remembered by content and pipeline: an unchanged re-run parses none of them and
names none of them; an edit, a pipeline change or ``--retry-failed`` tries them
again. A rebuild for a parser or chunker change takes the vectors of the chunk
texts the live collection already holds, and embeds only the others.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ragflow_config.cli import main
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import DataBlock
from ragflow_config.pipeline import Pipeline, Registry, RunOptions
from ragflow_config.rag._parsers.excel import ExcelParser
from ragflow_config.rag._parsers.html import HTMLParser
from ragflow_config.rag._parsers.pdf import PDFParser
from ragflow_config.rag._parsers.text import TextParser

FIXTURES = Path(__file__).parents[1] / "fixtures"
GOOD = [
    "report.pdf",
    "multilingual.pdf",
    "pdflatex-4-pages.pdf",
    "wikipedia-hermitian-matrix.html",
    "wikipedia-mozilla.html",
]
BAD = ["encrypted-password.pdf", "encrypted.xlsx", "truncated.pdf", "empty.txt"]


class Counted:
    """A parser that notes each file it is asked to parse."""

    parsed: ClassVar[list[str]] = []

    async def parse(self, file: bytes | str, filename: str) -> Any:
        Counted.parsed.append(filename)
        return await super().parse(file, filename)  # type: ignore[misc]


class CountedPDF(Counted, PDFParser):
    pass


class CountedHTML(Counted, HTMLParser):
    pass


class CountedExcel(Counted, ExcelParser):
    pass


class CountedText(Counted, TextParser):
    pass


class CountingModel(HashingEmbeddingModel):
    """The hashing model, noting the texts it embeds."""

    texts: ClassVar[list[str]] = []

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        CountingModel.texts.extend(item for item in batch if isinstance(item, str))
        return await super().embed_batch(batch)


@pytest.fixture
def registry() -> Registry:
    registry = Registry.from_entry_points()
    for name, cls in (
        ("counted_pdf", CountedPDF),
        ("counted_html", CountedHTML),
        ("counted_excel", CountedExcel),
        ("counted_text", CountedText),
    ):
        registry.register("parser", name, cls)
    registry.register("embedding", "counting", CountingModel)
    Counted.parsed.clear()
    CountingModel.texts.clear()
    return registry


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name in GOOD + BAD[:2]:
        shutil.copy(FIXTURES / name, corpus / name)
    (corpus / "truncated.pdf").write_bytes((FIXTURES / "report.pdf").read_bytes()[:1500])
    (corpus / "empty.txt").write_bytes(b"")
    return tmp_path


def write_pipeline(
    folder: Path, *, chunk_size: int = 256, table_format: str = "markdown", model: str = "counting"
) -> Path:
    path = folder / "pipeline.yaml"
    path.write_text(
        f"""\
version: 1
vector_stores:
  store: {{type: qdrant_edge, parameters: {{path: store}}}}
embeddings:
  model: {{type: {model}, parameters: {{dimensions: 64}}}}
knowledge_bases:
  - name: docs
    sources: [{{path: corpus}}]
    parsers:
      - {{type: counted_pdf, parameters: {{ocr: never}}}}
      - {{type: counted_html, parameters: {{table_format: {table_format}}}}}
      - {{type: counted_excel}}
      - {{type: counted_text}}
    chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 0}}}}
    embedding: model
    vector_store: store
    collection: docs
    on_error: skip
""",
        encoding="utf-8",
    )
    return path


async def run(path: Path, registry: Registry, **options: Any) -> Any:
    """One run's report, parsed and embedded in this process, where both are counted."""
    Counted.parsed.clear()
    CountingModel.texts.clear()
    report = await Pipeline.load(path, registry).run(options=RunOptions(workers=0, **options))
    return report.knowledge_bases[0]


async def stored_texts(path: Path, registry: Registry) -> dict[str, list[str]]:
    """The chunk texts the live collection holds, by source path."""
    async with Pipeline.load(path, registry).build() as built:
        kb = built.knowledge_bases["docs"]
        return {
            summary.source: [
                chunk.content.text  # type: ignore[union-attr]
                for chunk, _ in await kb.document_vectors(summary.document_id)
            ]
            for summary in await kb.list_documents()
        }


def new_texts(before: dict[str, list[str]], after: dict[str, list[str]]) -> list[str]:
    """The chunk texts of ``after`` that the same file's chunks in ``before`` did not hold."""
    return [
        text
        for source, texts in after.items()
        for text in texts
        if text not in set(before.get(source, []))
    ]


async def test_files_that_yield_nothing_are_not_parsed_again_until_they_change(
    folder: Path, registry: Registry
) -> None:
    path = write_pipeline(folder)
    first = await run(path, registry)
    nothing = {c.path: c.action for c in first.changes if c.action not in ("add",)}
    assert nothing == {
        "encrypted-password.pdf": "failed",
        "encrypted.xlsx": "failed",
        "truncated.pdf": "failed",
        "empty.txt": "empty",
    }
    assert sorted(Counted.parsed) == sorted(GOOD + BAD)

    again = await run(path, registry)
    assert Counted.parsed == []  # nothing parsed: the good files are stored, the bad remembered
    assert {c.path for c in again.changes if c.remembered} == set(BAD)
    assert {c.path: c.action for c in again.changes if c.remembered} == nothing
    assert again.count("unchanged") == len(GOOD)
    assert again.failures == 3  # still failures: the exit code and the switch policy see them

    # An edit retries the file (here: it now parses); the others stay remembered.
    shutil.copy(FIXTURES / "report.pdf", folder / "corpus" / "truncated.pdf")
    edited = await run(path, registry)
    assert Counted.parsed == ["truncated.pdf"]
    assert [c.action for c in edited.changes if c.path == "truncated.pdf"] == ["add"]
    assert {c.path for c in edited.changes if c.remembered} == set(BAD) - {"truncated.pdf"}

    # --retry-failed parses them all again.
    retried = await run(path, registry, retry_failed=True)
    assert sorted(Counted.parsed) == sorted(set(BAD) - {"truncated.pdf"})
    assert not any(c.remembered for c in retried.changes)
    assert retried.failures == 2


async def test_a_parser_change_retries_the_files_that_yielded_nothing(
    folder: Path, registry: Registry
) -> None:
    path = write_pipeline(folder)
    await run(path, registry)
    await run(path, registry)
    assert Counted.parsed == []
    write_pipeline(folder, table_format="json")  # the parsers' fingerprint changes
    rebuilt = await run(path, registry)
    assert rebuilt.rebuild is not None and rebuilt.rebuild.switched
    assert set(BAD) <= set(Counted.parsed)
    assert not any(c.remembered for c in rebuilt.changes)


def test_an_unchanged_re_run_names_no_file_and_list_skipped_does(
    folder: Path, registry: Registry, capsys: pytest.CaptureFixture[str]
) -> None:
    # The CLI with the registry's own parsers: the file says pdf, html, excel and text.
    path = write_pipeline(folder)
    text = path.read_text(encoding="utf-8").replace("counted_", "").replace("counting", "hashing")
    path.write_text(text, encoding="utf-8")
    run_args = ["run", str(path), "--workers", "0"]
    assert main(run_args) == 0
    first = capsys.readouterr()
    for name in BAD[:3]:
        assert f"docs: skipped {name}: " in first.err  # named once, with its reason

    for command in (run_args, ["plan", str(path)], ["verify", str(path)]):
        assert main(command) == 0, command
        again = capsys.readouterr()
        output = again.out + again.err
        assert not any(name in output for name in BAD), (command, output)
    assert main(run_args) == 0
    assert "docs: 4 files yielded nothing when last tried" in capsys.readouterr().out

    assert main(["list", str(path), "docs", "--skipped"]) == 0
    listed = capsys.readouterr().out
    assert "failed      encrypted-password.pdf  (" in listed
    assert "empty       empty.txt  (nothing to index in the file)" in listed
    assert "4 files remembered as yielding nothing" in listed
    assert main(["list", str(path), "docs"]) == 0
    assert "collections:" not in capsys.readouterr().out  # no rebuild: one collection

    # --strict makes them findings again, so each is named.
    assert main([*run_args, "--strict"]) == 1
    assert "docs: skipped encrypted.xlsx: " in capsys.readouterr().err


async def test_a_parser_change_re_embeds_only_the_chunks_it_changed(
    folder: Path, registry: Registry
) -> None:
    path = write_pipeline(folder)
    await run(path, registry)
    before = await stored_texts(path, registry)

    write_pipeline(folder, table_format="json")  # only the pages' tables change
    plan = await Pipeline.load(path, registry).run(options=RunOptions(dry_run=True))
    rebuilt = await run(path, registry)
    assert rebuilt.rebuild is not None and rebuilt.rebuild.switched
    after = await stored_texts(path, registry)
    changed = new_texts(before, after)
    assert 0 < len(changed) < rebuilt.chunks  # the tables changed, the prose did not
    assert sorted(CountingModel.texts) == sorted(changed)
    assert rebuilt.vectors.embedded == len(changed)
    assert rebuilt.vectors.reused == rebuilt.chunks - len(changed)
    assert plan.knowledge_bases[0].chunks_to_embed == rebuilt.chunks


async def test_a_chunker_change_and_back_embeds_only_new_texts_then_nothing(
    folder: Path, registry: Registry
) -> None:
    path = write_pipeline(folder)
    await run(path, registry)
    before = await stored_texts(path, registry)
    write_pipeline(folder, chunk_size=128)
    smaller = await run(path, registry)
    assert smaller.rebuild is not None and smaller.rebuild.switched
    after = await stored_texts(path, registry)
    new = new_texts(before, after)
    assert sorted(CountingModel.texts) == sorted(new)
    assert smaller.vectors.reused == smaller.chunks - len(new)

    write_pipeline(folder, chunk_size=256)
    back = await run(path, registry)
    assert back.rebuild is not None and back.rebuild.switched and back.rebuild.kept
    assert CountingModel.texts == [] and back.vectors.embedded == 0


async def test_a_new_embedding_model_reuses_no_vector(folder: Path, registry: Registry) -> None:
    registry.register("embedding", "other_counting", OtherCountingModel)
    path = write_pipeline(folder)
    await run(path, registry)
    write_pipeline(folder, model="other_counting")
    rebuilt = await run(path, registry)
    assert rebuilt.rebuild is not None and rebuilt.rebuild.switched
    assert rebuilt.vectors.reused == 0
    assert len(CountingModel.texts) == rebuilt.chunks > 0


class OtherCountingModel(CountingModel):
    """Another model of the same dimensions: its vectors must never be taken for the first's."""

    @property
    def model(self) -> str:
        return "hashing-other"
