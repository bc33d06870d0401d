"""``KnowledgeBase`` against AgentScope 2.0.11's, on Qdrant in memory and on Milvus Lite.

Both knowledge bases get the same embedding model object (the project's
hashing model), the same chunks, document ids, document metadata and
``metadata_filter``, each on its own store of the same kind; insert, search,
list and delete are compared field by field, ids and time stamps aside.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")

import agentscope.message as their_message
import agentscope.rag as theirs

import ragflow_config.message as our_message
import ragflow_config.rag as ours
from ragflow_config.embedding import HashingEmbeddingModel

from ._compare import plain

DOCUMENTS = {
    "cats": (
        "cats.md",
        [
            "Cats sleep twelve to sixteen hours a day.",
            "A cat's whiskers sense the air.",
            "Kittens open their eyes after a week.",
        ],
    ),
    "dogs": ("dogs.md", ["Dogs bark at the postman.", "A dog's nose is wet."]),
    "fish": ("fish.md", ["Fish sleep with their eyes open."]),
}
QUERIES = ["How long do cats sleep?", "wet nose", "eyes open", "unrelated words entirely"]
TENANT = {"tenant_id": "t1"}


def chunks(module: Any, message: Any, source: str, texts: list[str]) -> list[Any]:
    return [
        module.Chunk(
            content=message.TextBlock(text=text),
            source=source,
            chunk_index=i,
            total_chunks=len(texts),
            # A chunk claiming another tenant: metadata_filter wins on both sides.
            metadata={"position": i, "tenant_id": "intruder"} if i == 0 else {"position": i},
        )
        for i, text in enumerate(texts)
    ]


class SharedModel:
    """The one hashing model both sides embed with; AgentScope's blocks reach it as text."""

    def __init__(self, model: HashingEmbeddingModel) -> None:
        self.model = model
        self.dimensions = model.dimensions
        self.supports_multimodal = model.supports_multimodal

    async def __call__(self, inputs: list[Any], **kwargs: Any) -> Any:
        return await self.model(
            [x.text if isinstance(x, their_message.TextBlock) else x for x in inputs]
        )


@contextlib.asynccontextmanager
async def stores(kind: str, folder: Path) -> AsyncIterator[tuple[Any, Any]]:
    if kind == "qdrant":
        their_store: Any = theirs.QdrantStore(location=":memory:")
        our_store: Any = ours.QdrantStore(
            parameters=ours.QdrantStore.Parameters(location=":memory:")
        )
    else:
        their_store = theirs.MilvusLiteStore(uri=str(folder / "theirs.db"))
        our_store = ours.MilvusLiteStore(
            parameters=ours.MilvusLiteStore.Parameters(uri=str(folder / "ours.db"))
        )
    async with their_store, our_store:
        yield their_store, our_store


def hits(results: list[Any]) -> list[Any]:
    """Search results, plain, scores to 5 places (float32 storage on both sides).

    Hits of equal score may come in either order, and when they tie at the
    ``top_k`` cut either may be kept: within a score the hits are a sorted list,
    and at the lowest score only their number counts.
    """
    plain_hits = [{**plain(r), "score": round(r.score, 5)} for r in results]
    scores = sorted({h["score"] for h in plain_hits}, reverse=True)
    ranked: list[Any] = []
    for score in scores:
        same = sorted((h for h in plain_hits if h["score"] == score), key=repr)
        ranked.append((score, same if score != scores[-1] else len(same)))
    return ranked


@pytest.mark.parametrize("kind", ["qdrant", "milvus_lite"])
async def test_insert_search_list_delete_agree(kind: str, tmp_path: Path) -> None:
    model = HashingEmbeddingModel(dimensions=256)
    async with stores(kind, tmp_path) as (their_store, our_store):
        their_kb = theirs.KnowledgeBase(
            name="animals",
            description="Animal facts.",
            embedding_model=SharedModel(model),
            vector_store=their_store,
            collection="animals",
            metadata_filter=TENANT,
        )
        our_kb = ours.KnowledgeBase(
            name="animals",
            description="Animal facts.",
            embedding_model=model,
            vector_store=our_store,
            collection="animals",
            metadata_filter=TENANT,
        )
        for document_id, (source, texts) in DOCUMENTS.items():
            document_metadata = {"filename": source, "position": -1}
            their_id = await their_kb.insert_document(
                chunks(theirs, their_message, source, texts), document_id, document_metadata
            )
            our_id = await our_kb.insert_document(
                chunks(ours, our_message, source, texts), document_id, document_metadata
            )
            assert our_id == their_id == document_id

        for top_k in (1, 3, 10):
            for query in QUERIES:
                their_hits = await their_kb.search([query], top_k=top_k)
                our_hits = await our_kb.search([query], top_k=top_k)
                assert hits(our_hits) == hits(their_hits), (query, top_k)
            both = await their_kb.search(QUERIES, top_k=top_k)
            assert hits(await our_kb.search(QUERIES, top_k=top_k)) == hits(both)
        threshold = (await our_kb.search([QUERIES[0]], top_k=3))[1].score
        assert hits(await our_kb.search([QUERIES[0]], top_k=5, score_threshold=threshold)) == hits(
            await their_kb.search([QUERIES[0]], top_k=5, score_threshold=threshold)
        )

        async def summaries(kb: Any) -> list[dict[str, Any]]:
            """README row: document summaries. A summary's metadata is its chunk 0's here,
            an arbitrary chunk's in AgentScope (§9.14): checked against chunk 0 as listed
            by AgentScope's knowledge base, then left out of the comparison."""
            listed = sorted(plain(await kb.list_documents()), key=lambda s: s["document_id"])
            if kb is our_kb:
                for summary in listed:
                    [first] = await their_kb.list_chunks(summary["document_id"], limit=1)
                    assert summary["metadata"] == first.metadata
            return [{**summary, "metadata": None} for summary in listed]

        assert await summaries(our_kb) == await summaries(their_kb)
        our_chunks = await our_kb.list_chunks("cats", offset=1, limit=5)
        their_chunks = await their_kb.list_chunks("cats", offset=1, limit=5)
        assert plain(our_chunks) == plain(their_chunks)

        await their_kb.delete_document("dogs")
        await our_kb.delete_document("dogs")
        assert await summaries(our_kb) == await summaries(their_kb)
        assert hits(await our_kb.search(QUERIES, top_k=10)) == hits(
            await their_kb.search(QUERIES, top_k=10)
        )

        # Edge cases: an empty insert keeps the given id and writes nothing; no queries find
        # nothing; deleting an unknown document is no error.
        assert await our_kb.insert_document([], "empty") == "empty"
        assert await their_kb.insert_document([], "empty") == "empty"
        assert await our_kb.search([]) == await their_kb.search([]) == []
        await our_kb.delete_document("never-inserted")
        await their_kb.delete_document("never-inserted")
        assert await summaries(our_kb) == await summaries(their_kb)

        # Another tenant's handle on the same collection sees nothing of t1's, on both sides.
        for module, kb, model_ in ((theirs, their_kb, SharedModel(model)), (ours, our_kb, model)):
            other = module.KnowledgeBase(
                name="other",
                description="",
                embedding_model=model_,
                vector_store=kb.vector_store,
                collection="animals",
                metadata_filter={"tenant_id": "t2"},
            )
            assert await other.search(QUERIES, top_k=10) == []
            assert await other.list_documents() == []
