"""The Qdrant Edge store: Qdrant's in-process engine (Rust) on a local folder."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any, ClassVar

from ...._document import Chunk, DocumentSummary, VectorRecord
from .._paging import pages, summarize
from .._qdrant_payload import metadata_key
from ..base import flatten_filter, refuse_unencodable
from ._connection import BATCH, LEXICAL, TERMS
from ._filter import with_condition
from ._search import QdrantEdgeSearch


class QdrantEdgeStore(QdrantEdgeSearch):
    """A Qdrant Edge shard per collection, in one local folder: no server.

    Qdrant Edge is Qdrant's engine run in this process: an HNSW index for
    dense search, an inverted index for the sparse (lexical) side, payload
    indexes for filters, vectors on disk and int8 copies in memory. A search
    reads what it needs, not every point, and opening the folder loads
    nothing until a collection is used.

    One process has the folder at a time (its ``.lock``); a second is told
    which is the usual holder (a running ``serve``). A run's writes are
    logged ahead by the engine, and the index is optimised when the store is
    left after writing, so the next search finds the new points indexed.
    Points carry ``{"document_id", "chunk"}`` like :class:`QdrantStore`'s,
    and ``metadata_filter`` filters ``chunk.metadata.<key>`` by Qdrant's rules.
    """

    supports_lexical: ClassVar[bool] = True

    requires: ClassVar[dict[str, str]] = {"qdrant_edge": "qdrant-edge"}

    # Writes.

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        refuse_unencodable(self.store_name, records)
        shard = await self._shard(collection)
        await self._index_scopes(collection, shard, records)
        edge = self._edge
        self._written.add(collection)
        for batch in pages(records, BATCH):
            points = [
                edge.Point(
                    id=_point_id(record),
                    vector=self._vectors(record),
                    payload=_payload(record),
                )
                for record in batch
            ]
            await self._engine(shard.update, edge.UpdateOperation.upsert_points(points))

    def _vectors(self, record: VectorRecord) -> dict[str, Any]:
        """The dense vector, unnamed, and the record's terms as the sparse vector ``lexical``."""
        if not record.terms:
            return {"": record.vector}
        indices = sorted(record.terms)
        values = [record.terms[term] for term in indices]
        return {"": record.vector, LEXICAL: self._edge.SparseVector(indices, values)}

    async def _index_scopes(self, collection: str, shard: Any, records: list[VectorRecord]) -> None:
        """Index the metadata keys of the records' scopes (their knowledge bases'
        ``metadata_filter``): every search of such a knowledge base filters on them, and
        a tenant index lets the engine search one tenant's points without scanning others."""
        indexed = self._indexed.setdefault(collection, set())
        for scope in {record.scope for record in records if record.scope}:
            for path, value in flatten_filter(json.loads(scope)):
                key = metadata_key(self.store_name, path)
                if key in indexed:
                    continue
                params = self._index_params(value)
                await self._engine(
                    shard.update, self._edge.UpdateOperation.create_field_index(key, params)
                )
                indexed.add(key)

    def _index_params(self, value: Any) -> Any:
        edge = self._edge
        if isinstance(value, bool):
            return edge.PayloadSchemaType.Bool
        if isinstance(value, (int, float)):
            return edge.PayloadSchemaType.Float  # numbers are filtered as float ranges
        return edge.KeywordIndexParams(is_tenant=True)

    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        shard = await self._shard(collection)  # refuses a collection that does not exist
        self._written.add(collection)
        selected = self._filter(metadata_filter, document_id)
        await self._engine(
            shard.update, self._edge.UpdateOperation.delete_points_by_filter(selected)
        )

    # Listings.

    async def list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[DocumentSummary]:
        """Counted by the engine (a facet of the document index), then each document's
        chunk 0 read without its content: two small reads per document, none per chunk."""
        edge = self._edge
        shard = await self._shard(collection)
        scope = self._filter(metadata_filter)
        total = await self._engine(shard.count, edge.CountRequest(exact=True, filter=scope))
        if not total:
            return []
        facet = edge.FacetRequest(key="document_id", limit=total, exact=True, filter=scope)
        counts = {hit.value: hit.count for hit in (await self._engine(shard.facet, facet)).hits}
        first = edge.FieldCondition(key="chunk.chunk_index", range=edge.RangeFloat(lte=0))
        without_content = edge.PayloadSelector.Exclude(["chunk.content", TERMS])
        heads = {
            record.payload["document_id"]: record.payload["chunk"]
            for record in await self._scroll(
                shard, with_condition(edge, scope, first), without_content
            )
        }
        # A document without its chunk 0 (a write cut short) is described by its lowest.
        lowest = {document_id: 0 for document_id in heads}
        for document_id in counts.keys() - heads.keys():
            chunks = await self._scroll(
                shard,
                self._filter(metadata_filter, document_id),
                edge.PayloadSelector.Include(["chunk.chunk_index"]),
            )
            if chunks:
                lowest[document_id] = min(r.payload["chunk"]["chunk_index"] for r in chunks)
        found = {
            document_id: counts[document_id] for document_id in lowest if document_id in counts
        }
        return await summarize(self, collection, found, lowest, heads, metadata_filter)

    async def _chunk_window(
        self,
        collection: str,
        document_id: str,
        window: range,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Chunk]:
        shard = await self._shard(collection)
        selected = self._filter(metadata_filter, document_id, window)
        records = await self._scroll(shard, selected, self._edge.PayloadSelector.Exclude([TERMS]))
        return [Chunk.model_validate(record.payload["chunk"]) for record in records]

    async def document_vectors(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[tuple[Chunk, list[float]]]:
        shard = await self._shard(collection)
        selected = self._filter(metadata_filter, document_id)
        records = await self._scroll(
            shard, selected, self._edge.PayloadSelector.Exclude([TERMS]), vectors=[""]
        )
        return [
            (Chunk.model_validate(record.payload["chunk"]), list(_dense(record.vector)))
            for record in records
        ]


def _dense(vector: Any) -> Iterator[float]:
    return iter(vector[""] if isinstance(vector, dict) else vector)


def _payload(record: VectorRecord) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "document_id": record.document_id,
        "chunk": record.chunk.model_dump(mode="json"),
    }
    if record.terms is not None:
        payload[TERMS] = sorted(record.terms)
    return payload


def _point_id(record: VectorRecord) -> str:
    return str(uuid.UUID(record.key[:32]))
