"""A run killed inside a Milvus Lite insert of new documents leaves no duplicate and no half
document after the next run.

Milvus Lite's store writes ids it does not hold with ``insert`` (issue 40 item 5), and
Milvus keeps an inserted row beside a stored one with the same primary key. The
plugin below is the real store with its client's ``insert`` wrapped: at the second
request of the run that holds no chunk 0 (so its document is not complete), it
SIGKILLs its own process, either from a timer thread while the request is on its
way (``sending``: the rows may or may not land) or once the server has taken the
rows (``sent``: rows without their chunk 0, which is written last). Whatever the
kill left, the next run must give the store a never-killed run gives: each chunk
once (the server's row count equals the chunk count), every document whole, and
``verify`` clean.
"""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest
from _killing import install_plugin, run_killed

from ragflow_config.cli import main
from ragflow_config.pipeline import Pipeline, RunOptions

from .test_incremental import stored_chunks
from .test_interrupted_write import long_text

pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (extra: milvus)")

PLUGIN = '''
import os
import signal
import threading

from ragflow_config.rag import MilvusLiteStore

PHASE = os.environ["RAGFLOW_TEST_KILL_PHASE"]


def die():
    os.kill(os.getpid(), signal.SIGKILL)


class KillingMilvus(MilvusLiteStore):
    """Dies inside the second insert request that holds no chunk 0 (see the test)."""

    partial_inserts = 0

    async def __aenter__(self):
        await super().__aenter__()
        send = self.client.insert

        async def insert(collection, rows, **kwargs):
            if any(row["chunk_index"] == 0 for row in rows):
                return await send(collection, rows, **kwargs)
            KillingMilvus.partial_inserts += 1
            if KillingMilvus.partial_inserts < 2:
                return await send(collection, rows, **kwargs)
            if PHASE == "sending":  # the kill lands in the request, or just after it
                threading.Timer(0.0005, die).start()
            await send(collection, rows, **kwargs)
            die()

        self.client.insert = insert
        return self
'''

PIPELINE = """\
version: 1
vector_stores:
  store: {{type: {store_type}, parameters: {{uri: {folder}/milvus.db, batch_size: 8}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: 64}}}}
knowledge_bases:
  - name: docs
    sources: [{{path: corpus}}]
    chunker: {{type: approx_token, parameters: {{chunk_size: 64, overlap: 8}}}}
    embedding: model
    vector_store: store
    collection: docs
"""

FILES = 4


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_plugin(
        tmp_path_factory.mktemp("plugin"),
        "killing_milvus_insert",
        PLUGIN,
        {"killing_milvus_insert": "KillingMilvus"},
    )


def write_pipeline(folder: Path, store_type: str) -> Path:
    """Four new files of about 20 chunks each: three insert requests of 8 per document."""
    corpus = folder / "corpus"
    corpus.mkdir(parents=True, exist_ok=True)
    for seed in range(FILES):
        (corpus / f"handbook-{seed}.md").write_text(long_text(seed), encoding="utf-8")
    path = folder / f"{store_type}.yaml"
    path.write_text(PIPELINE.format(store_type=store_type, folder=folder), encoding="utf-8")
    return path


async def stored_rows(pipeline: Pipeline) -> int:
    """Rows the server counts in the knowledge base's collection, duplicates included."""
    async with pipeline.build() as built:
        kb = built.knowledge_bases["docs"]
        collection = await kb.ensure_collection()
        [row] = await kb.vector_store.client.query(
            collection, filter="", output_fields=["count(*)"], consistency_level="Strong"
        )
        return int(row["count(*)"])


@pytest.mark.slow
@pytest.mark.parametrize("phase", ["sending", "sent"])
def test_a_kill_inside_an_insert_of_new_documents_is_repaired_without_duplicates(
    tmp_path: Path, plugin_path: Path, phase: str, capsys: pytest.CaptureFixture[str]
) -> None:
    killing = write_pipeline(tmp_path, "killing_milvus_insert")
    plain = write_pipeline(tmp_path, "milvus_lite")
    run_killed(killing, plugin_path, RAGFLOW_TEST_KILL_PHASE=phase)

    pipeline = Pipeline.load(plain)
    report = asyncio.run(pipeline.run(options=RunOptions(workers=0)))
    actions = sorted(change.action for change in report.knowledge_bases[0].changes)
    assert len(actions) == FILES and set(actions) <= {"add", "repair", "unchanged"}
    if phase == "sent":  # rows of a document without its chunk 0 were stored
        assert "repair" in actions

    fresh_folder = tmp_path / "fresh"
    fresh = Pipeline.load(write_pipeline(fresh_folder, "milvus_lite"))
    asyncio.run(fresh.run(options=RunOptions(workers=0)))
    expected = asyncio.run(stored_chunks(fresh))
    assert asyncio.run(stored_chunks(pipeline)) == expected
    chunks = sum(len(chunks) for chunks in expected.values())
    assert chunks >= FILES * 16
    assert asyncio.run(stored_rows(pipeline)) == chunks  # no id stored twice

    again = asyncio.run(pipeline.run(options=RunOptions(workers=0)))
    assert {change.action for change in again.knowledge_bases[0].changes} == {"unchanged"}
    capsys.readouterr()
    assert main(["verify", str(plain)]) == 0
    shutil.rmtree(fresh_folder)
