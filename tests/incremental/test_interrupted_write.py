"""A run killed inside one document's write, on each embedded store, then the file changed back.

The store plugin below writes half of a document's records, then SIGKILLs its
own process: the state a store without a per-document transaction is left in
when a run dies mid-write. If the file then returns to the content the store
held before (a cancelled CI run followed by a run of the previous commit), the
stored mix of old and new chunks must still be found and repaired.
"""

from __future__ import annotations

import asyncio
import random
import shutil
import uuid
from pathlib import Path

import pytest
from _killing import KILLING_STORES, install_killing_stores, run_killed

from ragflow_config.cli import main
from ragflow_config.pipeline import Pipeline, RunOptions

from ._corpus import WORDS
from .test_incremental import stored_chunks

# The stores' `killing(base)` (see _killing.install_killing_stores).
PLUGIN = '''
def killing(base):
    class KillingStore(base):
        """Writes the first half of the first multi-record insert, then dies."""

        async def insert(self, collection, records):
            if len(records) > 1:
                await super().insert(collection, records[: len(records) // 2])
                os.kill(os.getpid(), signal.SIGKILL)
            await super().insert(collection, records)

    return KillingStore
'''

PIPELINE = """\
version: 1
vector_stores:
  store: {{type: {store_type}, parameters: {{{parameters}}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: 64}}}}
knowledge_bases:
  - name: docs
    sources: [{{path: corpus}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 64, overlap: 8}}}}
    embedding: model
    vector_store: store
    collection: {collection}
"""


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_killing_stores(tmp_path_factory.mktemp("plugin"), "killing_stores", PLUGIN)


def long_text(seed: int) -> str:
    """About 20 chunks at chunk_size 64; each seed gives other words at the same length."""
    rng = random.Random(seed)
    words = [rng.choice(WORDS).ljust(8, "x") for _ in range(600)]
    return "# Handbook\n\n" + "\n\n".join(" ".join(words[i : i + 30]) for i in range(0, 600, 30))


def write_pipelines(folder: Path, store: str) -> tuple[Path, Path]:
    """The same store as a killing plugin and as its plain type, in one folder."""
    killing_type, parameters = KILLING_STORES[store]
    collection = f"docs_{uuid.uuid4().hex[:8]}"
    paths = []
    for name, store_type in (("killing", killing_type), ("plain", store)):
        path = folder / f"{name}.yaml"
        path.write_text(
            PIPELINE.format(
                store_type=store_type,
                parameters=parameters.format(folder=folder),
                collection=collection,
            ),
            encoding="utf-8",
        )
        paths.append(path)
    return paths[0], paths[1]


@pytest.mark.slow
@pytest.mark.parametrize("store", sorted(KILLING_STORES))
def test_a_kill_inside_a_write_then_the_old_content_is_repaired(
    tmp_path: Path,
    plugin_path: Path,
    store: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if store == "pgvector":
        monkeypatch.setenv("PGVECTOR_DSN", request.getfixturevalue("pgvector_dsn"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    handbook = corpus / "handbook.md"
    handbook.write_text(long_text(1), encoding="utf-8")
    (corpus / "small.md").write_text("# Small\n\nA small file that never changes.\n")
    killing, plain = write_pipelines(tmp_path, store)
    pipeline = Pipeline.load(plain)
    asyncio.run(pipeline.run(options=RunOptions(workers=0)))
    before = asyncio.run(stored_chunks(pipeline))
    assert len(before["handbook.md"]) >= 16

    handbook.write_text(long_text(2), encoding="utf-8")
    run_killed(killing, plugin_path)
    handbook.write_text(long_text(1), encoding="utf-8")

    capsys.readouterr()
    assert main(["verify", str(plain)]) == 1
    assert "handbook.md" in capsys.readouterr().out

    report = asyncio.run(pipeline.run(options=RunOptions(workers=0)))
    actions = {change.path: change.action for change in report.knowledge_bases[0].changes}
    assert actions == {"handbook.md": "repair", "small.md": "unchanged"}
    assert asyncio.run(stored_chunks(pipeline)) == before
    assert main(["verify", str(plain)]) == 0


async def stored_vectors(pipeline: Pipeline) -> dict[str, dict[int, tuple[str, list[float]]]]:
    """Every stored chunk's text and vector, by source and chunk index."""
    async with pipeline.build() as built:
        kb = built.knowledge_bases["docs"]
        return {
            summary.source: {
                chunk.chunk_index: (chunk.content.text, vector)  # type: ignore[union-attr]
                for chunk, vector in await kb.document_vectors(summary.document_id)
            }
            for summary in await kb.list_documents()
        }


@pytest.mark.slow
@pytest.mark.parametrize("store", ["pgvector", "qdrant"])
def test_a_kill_inside_a_write_that_reuses_vectors_converges_like_a_fresh_run(
    tmp_path: Path,
    plugin_path: Path,
    store: str,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The killed write took the unchanged chunks' vectors from the stored version, and the
    repairing run takes them from what the killed one left: the result is the fresh run's."""
    if store == "pgvector":
        monkeypatch.setenv("PGVECTOR_DSN", request.getfixturevalue("pgvector_dsn"))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    handbook = corpus / "handbook.md"
    handbook.write_text(long_text(1), encoding="utf-8")
    killing, plain = write_pipelines(tmp_path, store)
    pipeline = Pipeline.load(plain)
    asyncio.run(pipeline.run(options=RunOptions(workers=0)))
    before = asyncio.run(stored_vectors(pipeline))["handbook.md"]

    paragraphs = long_text(1).split("\n\n")
    paragraphs.insert(len(paragraphs) // 2, long_text(2).split("\n\n")[3])
    handbook.write_text("\n\n".join(paragraphs), encoding="utf-8")
    run_killed(killing, plugin_path)
    report = asyncio.run(pipeline.run(options=RunOptions(workers=0)))
    assert [change.action for change in report.knowledge_bases[0].changes] == ["repair"]

    fresh_folder = tmp_path / "fresh"
    shutil.copytree(corpus, fresh_folder / "corpus")
    fresh = Pipeline.load(write_pipelines(fresh_folder, store)[1])
    asyncio.run(fresh.run(options=RunOptions(workers=0)))
    after = asyncio.run(stored_vectors(pipeline))["handbook.md"]
    expected = asyncio.run(stored_vectors(fresh))["handbook.md"]
    assert after.keys() == expected.keys()
    for index, (text, vector) in expected.items():
        assert after[index][0] == text
        assert after[index][1] == pytest.approx(vector, abs=1e-6)
    kept = {text for text, _ in before.values()} & {text for text, _ in after.values()}
    assert len(kept) >= 8  # chunks that kept their text: there was something to reuse
