"""A real `ragflow-config run` process killed (SIGKILL) mid-way converges when run again.

The kill comes from a store plugin, installed the way any third-party package
is (a ``*.dist-info`` with an entry point, on ``PYTHONPATH``), that kills its
own process just before its N-th write (an upsert batch or a delete).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from _killing import install_plugin, run_killed

from ragflow_config.pipeline import Pipeline, RunOptions

from ._corpus import write_corpus, write_pipeline
from .test_incremental import stored_chunks

PLUGIN = '''
import os
import signal

from ragflow_config.rag import QdrantStore


class KillingQdrantStore(QdrantStore):
    """QdrantStore that SIGKILLs its process before write number RAGFLOW_TEST_KILL_AT."""

    async def __aenter__(self):
        await super().__aenter__()
        limit = int(os.environ["RAGFLOW_TEST_KILL_AT"])
        writes = 0
        for name in ("upsert", "delete"):
            original = getattr(self.client, name)  # opens the folder

            async def counted(*args, _original=original, **kwargs):
                nonlocal writes
                writes += 1
                if writes >= limit:
                    os.kill(os.getpid(), signal.SIGKILL)
                return await _original(*args, **kwargs)

            setattr(self.client, name, counted)
        return self
'''


@pytest.fixture(scope="module")
def plugin_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return install_plugin(
        tmp_path_factory.mktemp("plugin"),
        "killing_store",
        PLUGIN,
        {"killing_qdrant": "KillingQdrantStore"},
    )


def edit_corpus(corpus: Path) -> None:
    """Change, shrink, grow, delete and add files."""
    files = sorted(corpus.rglob("*.md"))
    for index, path in enumerate(files[:9]):
        text = path.read_text(encoding="utf-8")
        path.write_text(
            text[: len(text) // 3] if index % 2 else text + "\n\n" + text, encoding="utf-8"
        )
    for path in files[9:12]:
        path.unlink()
    (corpus / "part0/added-1.md").write_text(
        "# Added\n\nglacier summit beacon.\n", encoding="utf-8"
    )
    (corpus / "part1/added-2.md").write_text(
        "# Added too\n\nwillow canyon.\n" * 20, encoding="utf-8"
    )


def pipelines(tmp_path: Path, corpus: Path, name: str) -> tuple[Path, Path]:
    """A killing pipeline and a plain one on the same store."""
    store = tmp_path / f"store-{name}"
    killing = write_pipeline(
        tmp_path / f"{name}-killing.yaml",
        store_path=store,
        corpus=corpus,
        store_type="killing_qdrant",
        extra_store_parameters="batch_size: 2",
    )
    plain = write_pipeline(
        tmp_path / f"{name}.yaml",
        store_path=store,
        corpus=corpus,
        extra_store_parameters="batch_size: 2",
    )
    return killing, plain


async def reference_state(tmp_path: Path, corpus: Path) -> dict[str, list[tuple[int, str]]]:
    path = write_pipeline(
        tmp_path / "reference.yaml", store_path=tmp_path / "reference", corpus=corpus
    )
    reference = Pipeline.load(path)
    await reference.run(options=RunOptions(workers=0))
    return await stored_chunks(reference)


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", [1, 6, 19, 45])
async def test_killed_first_run_converges(tmp_path: Path, plugin_path: Path, kill_at: int) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 24)
    killing, plain = pipelines(tmp_path, corpus, "index")
    run_killed(killing, plugin_path, RAGFLOW_TEST_KILL_AT=str(kill_at))

    pipeline = Pipeline.load(plain)
    report = (await pipeline.run(options=RunOptions(workers=0))).knowledge_bases[0]
    assert not report.count("failed")
    assert await stored_chunks(pipeline) == await reference_state(tmp_path, corpus)
    assert not (await pipeline.run(options=RunOptions(workers=0, dry_run=True))).pending


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", [2, 9, 23, 31])
async def test_killed_update_run_converges(tmp_path: Path, plugin_path: Path, kill_at: int) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 24)
    killing, plain = pipelines(tmp_path, corpus, "update")
    pipeline = Pipeline.load(plain)
    await pipeline.run(options=RunOptions(workers=0))
    edit_corpus(corpus)

    run_killed(killing, plugin_path, RAGFLOW_TEST_KILL_AT=str(kill_at))
    await pipeline.run(options=RunOptions(workers=0))
    assert await stored_chunks(pipeline) == await reference_state(tmp_path, corpus)
    assert not (await pipeline.run(options=RunOptions(workers=0, dry_run=True))).pending


HYBRID = "retrieval: {mode: hybrid}"


async def lexical_view(path: Path) -> tuple[object, ...]:
    """What the lexical side holds: term counts and every word's BM25-weighted hits."""
    from ._corpus import WORDS

    async with Pipeline.load(path).build() as built:
        kb = built.knowledge_bases["docs"]
        store, analyzer = kb.vector_store, kb._analyzer  # type: ignore[attr-defined]
        ids = [analyzer.term_id(term) for word in WORDS for term in analyzer.terms(word)]
        counts = await store.term_counts(kb.collection, ids)
        hits = [
            sorted(
                (h.chunk.source, h.chunk.chunk_index, round(h.score, 5))
                for h in await store.lexical_search(kb.collection, {term: 1.0}, top_k=10_000)
            )
            for term in ids
        ]
        return counts, hits


@pytest.mark.slow
@pytest.mark.parametrize("kill_at", [9, 31])
async def test_a_killed_hybrid_run_converges_on_both_sides(
    tmp_path: Path, plugin_path: Path, kill_at: int
) -> None:
    corpus = tmp_path / "corpus"
    write_corpus(corpus, 24)
    common = {"corpus": corpus, "extra_store_parameters": "batch_size: 2", "retrieval": HYBRID}
    store = tmp_path / "store"
    killing = write_pipeline(
        tmp_path / "killing.yaml", store_path=store, store_type="killing_qdrant", **common
    )
    plain = write_pipeline(tmp_path / "plain.yaml", store_path=store, **common)
    pipeline = Pipeline.load(plain)
    await pipeline.run(options=RunOptions(workers=0))
    edit_corpus(corpus)

    run_killed(killing, plugin_path, RAGFLOW_TEST_KILL_AT=str(kill_at))
    await pipeline.run(options=RunOptions(workers=0))
    reference = write_pipeline(tmp_path / "reference.yaml", store_path=tmp_path / "ref", **common)
    await Pipeline.load(reference).run(options=RunOptions(workers=0))
    assert await stored_chunks(pipeline) == await stored_chunks(Pipeline.load(reference))
    assert await lexical_view(plain) == await lexical_view(reference)
