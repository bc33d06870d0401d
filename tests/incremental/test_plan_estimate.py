"""`plan`'s chunk estimate is what `run` writes (issue 52, trap 5): on the sample corpus,
and on a mixed folder (HTML, JSON Lines records, Markdown, an empty and a broken file)
after a chunker change, which rebuilds beside the live collection.

Real parsers, the hashing model and Qdrant on local disk.
"""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest

from ragflow_config.pipeline import Pipeline, RunOptions

PIPELINES = Path(__file__).resolve().parents[2] / "pipelines"
IN_PROCESS = RunOptions(workers=0)
PLAN = RunOptions(workers=0, dry_run=True)


def pipeline(folder: Path, sources: str, parsers: str, chunk_size: int) -> Pipeline:
    path = folder / "pipeline.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        version: 1
        vector_stores:
          store: {{type: qdrant, parameters: {{path: store}}}}
        embeddings:
          model: {{type: hashing, parameters: {{dimensions: 64}}}}
        knowledge_bases:
          - name: docs
            sources: {sources}
            parsers: {parsers}
            chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 16}}}}
            embedding: model
            vector_store: store
            collection: docs
            prune: true
        """),
        encoding="utf-8",
    )
    return Pipeline.load(path)


async def planned_then_written(made: Pipeline) -> tuple[int, int, int]:
    """The plan's chunk estimate, its rebuild's (0 without one), and what the run wrote."""
    [plan] = (await made.run(options=PLAN)).knowledge_bases
    rebuild = plan.rebuild.chunks_to_embed if plan.rebuild else 0
    [report] = (await made.run(options=IN_PROCESS)).knowledge_bases
    return plan.chunks_to_embed, rebuild, report.chunks


async def test_on_the_sample_the_estimate_is_what_the_run_writes(tmp_path: Path) -> None:
    shutil.copytree(PIPELINES / "corpus", tmp_path / "corpus")
    sources = '[{path: corpus, include: ["**/*.md", "**/*.rst", "**/*.txt"]}]'
    first = await planned_then_written(pipeline(tmp_path, sources, "[{type: text}]", 256))
    assert first[0] == first[2] > 0 and first[1] == 0
    smaller = await planned_then_written(pipeline(tmp_path, sources, "[{type: text}]", 128))
    assert smaller[0] == smaller[1] == smaller[2] > first[2]


@pytest.mark.parametrize("chunk_sizes", [(256, 128)])
async def test_on_a_mixed_folder_after_a_chunker_change(
    tmp_path: Path, chunk_sizes: tuple[int, int]
) -> None:
    mixed = tmp_path / "mixed"
    shutil.copytree(PIPELINES / "mixed", mixed, ignore=shutil.ignore_patterns("*.pdf"))
    shutil.copytree(PIPELINES / "corpus" / "tutorial", mixed / "tutorial")
    (mixed / "empty.md").write_text("", encoding="utf-8")
    (mixed / "broken.jsonl").write_text('{"term": "unterminated\n', encoding="utf-8")
    sources = '[{path: mixed, include: ["**/*.html", "**/*.jsonl", "**/*.md"]}]'
    parsers = "[{type: markdown}, {type: html}, {type: records}, {type: text}]"
    old, new = chunk_sizes
    first = await planned_then_written(pipeline(tmp_path, sources, parsers, old))
    assert first[0] == first[2] > 0
    changed = await planned_then_written(pipeline(tmp_path, sources, parsers, new))
    assert changed[0] == changed[1] == changed[2] > first[2]
