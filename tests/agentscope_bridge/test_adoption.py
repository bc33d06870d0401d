"""A collection AgentScope 2.0.11's KnowledgeBase wrote, adopted by a pipeline (issue 37, item 4).

AgentScope indexes four files itself (its TextParser, ApproxTokenChunker and
KnowledgeBase, on its QdrantStore in a local folder, with this package's
hashing model, which it can call). A pipeline over the same files, store,
collection and model then finds four documents no run wrote: `plan` and
`verify` call them foreign, `run` stops without `--adopt`, and `run --adopt`
takes them over keeping their vectors, after which `verify` is in sync and a
search finds each passage once.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("agentscope", reason="the agentscope extra is not installed")

import agentscope.rag as theirs

from ragflow_config.cli._main import main
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.pipeline import Pipeline, RunOptions
from ragflow_config.pipeline._run import RunRefused

FILES = {
    "pto.md": "Employees get twenty five days of paid time off each year.",
    "trains.md": "Trains to the office leave every ten minutes from platform two.",
    "guides/laptops.md": "Laptops are replaced every three years by the IT desk.",
    "lunch.md": "Lunch is served in the canteen from noon until two.",
}
PIPELINE = """\
version: 1
vector_stores:
  local: {type: qdrant, parameters: {path: qdrant}}
embeddings:
  hashing: {type: hashing, parameters: {dimensions: 64}}
knowledge_bases:
  - name: handbook
    description: The handbook.
    sources: [{path: docs}]
    embedding: hashing
    vector_store: local
    collection: handbook
"""


async def agentscope_indexes(folder: Path) -> None:
    parser, chunker = theirs.TextParser(), theirs.ApproxTokenChunker()
    async with theirs.QdrantStore(path=str(folder / "qdrant")) as store:
        kb = theirs.KnowledgeBase(
            name="handbook",
            description="The handbook.",
            embedding_model=HashingEmbeddingModel(dimensions=64),
            vector_store=store,
            collection="handbook",
        )
        for name in FILES:
            data = (folder / "docs" / name).read_bytes()
            sections = await parser.parse(data, Path(name).name)
            # As AgentScope's service does: the uploaded file's name in the metadata.
            await kb.insert_document(
                await chunker.chunk(sections), document_metadata={"filename": name}
            )


@pytest.fixture
async def written(tmp_path: Path) -> Path:
    for name, text in FILES.items():
        path = tmp_path / "docs" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    (tmp_path / "pipeline.yaml").write_text(PIPELINE)
    await agentscope_indexes(tmp_path)
    return tmp_path


async def documents(pipeline: Pipeline) -> list[tuple[str, str]]:
    async with pipeline.build() as built:
        kb = built.knowledge_bases["handbook"]
        return sorted((s.source, s.document_id) for s in await kb.list_documents())


async def test_plan_calls_them_foreign_and_run_stops_without_adopt(written: Path) -> None:
    pipeline = Pipeline.load(written / "pipeline.yaml")
    before = await documents(pipeline)
    assert len(before) == 4

    plan = await pipeline.run(options=RunOptions(dry_run=True, workers=0))
    [kb] = plan.knowledge_bases
    foreign = sorted(c.path for c in kb.changes if c.action == "foreign")
    assert foreign == sorted(FILES)

    with pytest.raises(RunRefused, match=r"4 document\(s\).*run --adopt"):
        await pipeline.run(options=RunOptions(workers=0))
    assert await documents(pipeline) == before  # nothing written


def test_verify_and_run_say_so_with_the_contracts_exit_code(
    written: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = str(written / "pipeline.yaml")
    assert main(["verify", file]) == 1
    out = capsys.readouterr().out
    assert out.count("foreign") >= 4 and "run --adopt" in out
    assert main(["plan", file, "--format", "markdown"]) == 0
    assert "Written outside runs (`run --adopt` takes them over)" in capsys.readouterr().out
    assert main(["run", file, "--workers", "0"]) == 1
    assert "--adopt" in capsys.readouterr().err


async def test_run_adopt_takes_them_over_keeping_their_vectors(
    written: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = Pipeline.load(written / "pipeline.yaml")
    report = await pipeline.run(options=RunOptions(adopt=True, workers=0))
    [kb] = report.knowledge_bases
    assert sorted(c.path for c in kb.changes if "adopted document" in c.reason) == sorted(FILES)
    assert not [c for c in kb.changes if c.action == "foreign"]
    # The same model, chunker and parser as AgentScope's: every vector kept, none made.
    assert (kb.vectors.embedded, kb.vectors.reused) == (0, 4)

    after = await documents(pipeline)
    assert sorted(source for source, _ in after) == sorted(FILES)  # the run names them by path
    async with pipeline.build() as built:
        hits = await built.knowledge_bases["handbook"].search(["paid time off"], top_k=8)
    assert len(hits) == 4 and len({hit.chunk.source for hit in hits}) == 4  # no duplicates

    # The command runs its own event loop, so in a thread of its own here.
    assert await asyncio.to_thread(main, ["verify", str(written / "pipeline.yaml")]) == 0
    assert "4 documents in sync, 0 drifted" in capsys.readouterr().out
    second = await pipeline.run(options=RunOptions(workers=0))
    assert {c.action for c in second.knowledge_bases[0].changes} == {"unchanged"}


async def test_a_foreign_document_of_no_file_is_reported_and_left(written: Path) -> None:
    (written / "docs" / "lunch.md").unlink()
    pipeline = Pipeline.load(written / "pipeline.yaml")
    report = await pipeline.run(options=RunOptions(adopt=True, workers=0))
    [kb] = report.knowledge_bases
    [left] = [c for c in kb.changes if c.action == "foreign"]
    assert left.path == "lunch.md" and "no source file matches it" in left.reason
    assert len(await documents(pipeline)) == 4  # three adopted, the fourth left as it was


# AgentScope's Milvus Lite server keeps the file for its process: it writes in one of its own.
AGENTSCOPE_WRITES_MILVUS = """
import asyncio, sys
import agentscope.message as m, agentscope.rag as r
from ragflow_config.embedding import HashingEmbeddingModel

async def main():
    async with r.MilvusLiteStore(uri=sys.argv[1]) as store:
        kb = r.KnowledgeBase(name="handbook", description="d", collection="handbook",
            embedding_model=HashingEmbeddingModel(dimensions=64), vector_store=store)
        chunk = r.Chunk(content=m.TextBlock(text="Lunch is at noon."), source="lunch.md",
            chunk_index=0, total_chunks=1)
        await kb.insert_document([chunk], document_metadata={"filename": "lunch.md"})

asyncio.run(main())
"""


@pytest.mark.slow
async def test_a_milvus_lite_collection_agentscope_made_is_named_as_such(tmp_path: Path) -> None:
    """AgentScope's Milvus collections lack the fields this store keys documents by: a
    pipeline over one says so, rather than Milvus' 'invalid parameter'."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "lunch.md").write_text("Lunch is at noon.")
    db = tmp_path / "kb.db"
    subprocess.run([sys.executable, "-c", AGENTSCOPE_WRITES_MILVUS, str(db)], check=True)
    (tmp_path / "pipeline.yaml").write_text(
        PIPELINE.replace(
            "{type: qdrant, parameters: {path: qdrant}}",
            f"{{type: milvus_lite, parameters: {{uri: {db}}}}}",
        )
    )
    pipeline = Pipeline.load(tmp_path / "pipeline.yaml")
    async with pipeline.build() as built:  # its search works as it is
        [hit] = await built.knowledge_bases["handbook"].search(["Lunch is at noon."], top_k=1)
        assert hit.score == pytest.approx(1.0)
    with pytest.raises(Exception, match="fields of AgentScope's MilvusLiteStore"):
        await pipeline.run(options=RunOptions(dry_run=True, workers=0))
