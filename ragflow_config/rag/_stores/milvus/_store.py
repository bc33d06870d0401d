"""Milvus: a local Milvus Lite file (embedded, no server) or a Milvus server."""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ...._document import Chunk, DocumentSummary, VectorRecord
from ...._errors import UnstorableDocumentError, VectorStoreError
from ...._extras import require
from .._paging import pages, summarize_keys
from .._pointer import POINTER_REGISTRY
from ..base import refuse_unencodable
from . import _connection, _filter
from ._connection import MAX_VARCHAR
from ._names import document_key, milvus_name
from ._pointers import MilvusPointers
from ._search import METRICS, MilvusSearch

_MAX_TERMS = 4096  # Milvus's largest array: the distinct terms a chunk can hold


class MilvusLiteStore(MilvusSearch, MilvusPointers):
    """A Milvus collection per knowledge base.

    ``uri`` is a local ``.db`` file (Milvus Lite, started in-process) or a
    Milvus server (``http://host:19530``), whose token is ``credential`` or the
    variable ``token_env``. Each entity carries the chunk, its metadata as a
    JSON field, and a hash of the document id, so filters are native
    expressions in which no document id or filter value can change the syntax.

    The lexical side (``create_lexical_collection``) adds ``terms``, a sparse
    vector under an exact inverted index scored by inner product, and
    ``term_ids``, an array of its term ids that ``term_counts`` counts with
    ``array_contains``.
    """

    requires: ClassVar[dict[str, str]] = {"pymilvus": "milvus", "milvus_lite": "milvus"}
    supports_lexical: ClassVar[bool] = True

    async def create_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=False)

    async def create_lexical_collection(self, name: str, dimensions: int) -> None:
        await self._create(name, dimensions, lexical=True)

    async def _create(self, name: str, dimensions: int, *, lexical: bool) -> None:
        timeout = self.parameters.timeout
        self._lexical.pop(name, None)
        if await self.has_collection(name):
            # A server may have restarted with the collection released.
            await self._call(
                lambda client: client.load_collection(milvus_name(name), timeout=timeout)
            )
            return
        pymilvus = require("pymilvus", "milvus")
        DataType = pymilvus.DataType
        schema = pymilvus.AsyncMilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, max_length=64, is_primary=True)
        schema.add_field("document_key", DataType.VARCHAR, max_length=64)
        schema.add_field("document_id", DataType.VARCHAR, max_length=MAX_VARCHAR)
        schema.add_field("chunk_index", DataType.INT64)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dimensions)
        schema.add_field("chunk", DataType.JSON)
        schema.add_field("metadata", DataType.JSON)
        if lexical:
            schema.add_field("terms", DataType.SPARSE_FLOAT_VECTOR)
            schema.add_field(
                "term_ids", DataType.ARRAY, element_type=DataType.INT64, max_capacity=_MAX_TERMS
            )
        index_params = pymilvus.AsyncMilvusClient.prepare_index_params()
        index_params.add_index(
            field_name="vector",
            index_type="AUTOINDEX",
            metric_type=METRICS[self.parameters.distance],
        )
        if lexical:  # an inverted index: every posting is scored, so the inner product is exact
            index_params.add_index(
                field_name="terms", index_type="SPARSE_INVERTED_INDEX", metric_type="IP"
            )
        # Passing the index makes Milvus build and load the collection.
        await self._call(
            lambda client: client.create_collection(
                milvus_name(name), schema=schema, index_params=index_params, timeout=timeout
            )
        )

    async def delete_collection(self, name: str) -> None:
        self._lexical.pop(name, None)
        if name == POINTER_REGISTRY:
            self._registry_loaded = False
        if await self.has_collection(name):
            await self._call(
                lambda client: client.drop_collection(
                    milvus_name(name), timeout=self.parameters.timeout
                )
            )

    async def has_collection(self, name: str) -> bool:
        return bool(
            await self._call(
                lambda client: client.has_collection(
                    milvus_name(name), timeout=self.parameters.timeout
                )
            )
        )

    async def collection_dimensions(self, name: str) -> int | None:
        if not await self.has_collection(name):
            return None
        description = await self._call(
            lambda client: client.describe_collection(
                milvus_name(name), timeout=self.parameters.timeout
            )
        )
        for field in description["fields"]:
            if field["name"] == "vector":
                return int(field["params"]["dim"])
        raise VectorStoreError(self.store_name, f"collection {name!r} has no vector field")

    async def has_lexical(self, name: str) -> bool:
        if name not in self._lexical:
            description = await self._call(
                lambda client: client.describe_collection(
                    milvus_name(name), timeout=self.parameters.timeout
                )
            )
            self._lexical[name] = any(f["name"] == "terms" for f in description["fields"])
        return self._lexical[name]

    async def insert(self, collection: str, records: list[VectorRecord]) -> None:
        refuse_unencodable(self.store_name, records)
        for record in records:
            if len(record.document_id.encode()) > MAX_VARCHAR:
                raise UnstorableDocumentError(
                    self.store_name,
                    f"{record.chunk.source}: its document_id is longer than Milvus's "
                    f"VARCHAR limit of {MAX_VARCHAR} bytes",
                )
            if record.terms and len(record.terms) > _MAX_TERMS:
                raise UnstorableDocumentError(
                    self.store_name,
                    f"{record.chunk.source} chunk {record.chunk.chunk_index}: "
                    f"{len(record.terms)} distinct terms, more than Milvus's array limit of "
                    f"{_MAX_TERMS}; use smaller chunks",
                )
        # A collection with a lexical side gets every record's terms (none for
        # none): Milvus needs every field, and an upsert replaces them all.
        lexical = any(r.terms is not None for r in records) or (
            bool(records) and await self.has_lexical(collection)
        )
        write = self._insert_or_upsert if self.is_lite else self._upsert
        for batch in pages(records, self.parameters.batch_size):
            await write(collection, [_row(record, lexical) for record in batch])

    async def _insert_or_upsert(self, collection: str, rows: list[dict[str, Any]]) -> None:
        """Milvus Lite: insert the rows whose ids are not stored, upsert the others.

        Milvus Lite's upsert deletes by id first, at a cost per row that grows
        with the collection (0.3 ms at 2,000 rows, 1.9 ms at 16,000), which
        made a full run quadratic in chunks; an insert's cost stays flat
        (bench/milvus_insert.py). An insert of a stored id would add a second
        row beside the first, so the ids are looked up first: with a strong
        read, in the same turn as the writes, on a file no other process can
        serve. A run killed inside the insert leaves each id at most once; the
        next run finds that document without its chunk 0 (written last) and
        repairs it by deleting the document before writing it again.
        """
        name = milvus_name(collection)
        timeout = self.parameters.timeout

        async def write(client: Any) -> None:
            stored: set[str] = set()
            for page in pages(rows, _connection._QUERY_PAGE):
                ids = [row["id"] for row in page]
                found = await client.query(
                    name,
                    filter=f"id in {json.dumps(ids)}",  # hex digests: nothing to escape
                    output_fields=["id"],
                    limit=len(ids),
                    timeout=timeout,
                    consistency_level="Strong",
                )
                stored.update(row["id"] for row in found)
            # The last of two rows with one id wins, as in an upsert.
            new = list({row["id"]: row for row in rows if row["id"] not in stored}.values())
            if new:
                await client.insert(name, new, timeout=timeout)
            if stored:
                await client.upsert(
                    name, [row for row in rows if row["id"] in stored], timeout=timeout
                )

        try:
            await self._call(write)
        finally:  # a failed write may have inserted some rows
            if self._clock is not None:
                self._clock.inserted(len(rows))

    async def delete(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> None:
        expression = _filter.expression(metadata_filter, document_id)
        timeout = self.parameters.timeout
        if not _filter.approximate(metadata_filter):
            await self._call(
                lambda client: client.delete(
                    milvus_name(collection), filter=expression, timeout=timeout
                )
            )
            return
        rows = await self._query_all(collection, expression, ["chunk"])
        ids = [row["id"] for row in _filter.exact(rows, metadata_filter)]
        if ids:
            await self._call(
                lambda client: client.delete(milvus_name(collection), ids=ids, timeout=timeout)
            )

    async def list_documents(
        self, collection: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[DocumentSummary]:
        # Every chunk's two key fields, and the chunk JSON (content and all) of
        # chunk 0s alone: a re-run's state read costs little per chunk.
        expression = _filter.expression(metadata_filter)
        key_fields = ["document_id", "chunk_index"]
        if _filter.approximate(metadata_filter):  # exact() then needs the metadata
            key_fields.append("chunk")
        try:
            rows = await self._query_all(collection, expression, key_fields)
        except VectorStoreError as exc:
            raise await self._agentscope_layout(collection) or exc from exc
        keys = _filter.exact(rows, metadata_filter)
        first = f"({expression}) and chunk_index == 0" if expression else "chunk_index == 0"
        heads = _filter.exact(
            await self._query_all(collection, first, ["document_id", "chunk"]), metadata_filter
        )
        return await summarize_keys(
            self,
            collection,
            ((row["document_id"], row["chunk_index"]) for row in keys),
            {row["document_id"]: row["chunk"] for row in heads},
            metadata_filter,
        )

    async def _agentscope_layout(self, collection: str) -> VectorStoreError | None:
        """The error to give for a collection AgentScope's MilvusLiteStore made, whose
        fields lack the ``chunk_index`` and ``document_key`` this store lists and keys by;
        ``None`` for any other."""
        description = await self._call(
            lambda client: client.describe_collection(
                milvus_name(collection), timeout=self.parameters.timeout
            )
        )
        if any(field["name"] == "chunk_index" for field in description["fields"]):
            return None
        return VectorStoreError(
            self.store_name,
            f"collection {collection!r} has the fields of AgentScope's MilvusLiteStore (no "
            "chunk_index): this store searches it, but cannot list, adopt or update its "
            "documents; index the files into a new collection with a pipeline, or adopt "
            "AgentScope's collections from a Qdrant store",
        )

    async def _chunk_window(
        self,
        collection: str,
        document_id: str,
        window: range,
        metadata_filter: dict[str, Any] | None,
    ) -> list[Chunk]:
        within = f"chunk_index >= {int(window.start)} and chunk_index < {int(window.stop)}"
        expression = f"{_filter.expression(metadata_filter, document_id)} and {within}"
        rows = _filter.exact(
            await self._query_all(collection, expression, ["chunk"]), metadata_filter
        )
        return [Chunk.model_validate(row["chunk"]) for row in rows]

    async def document_vectors(
        self, collection: str, document_id: str, metadata_filter: dict[str, Any] | None = None
    ) -> list[tuple[Chunk, list[float]]]:
        expression = _filter.expression(metadata_filter, document_id)
        rows = await self._query_all(collection, expression, ["chunk", "vector"])
        return [
            (Chunk.model_validate(row["chunk"]), [float(x) for x in row["vector"]])
            for row in _filter.exact(rows, metadata_filter)
        ]


def _row(record: VectorRecord, lexical: bool = False) -> dict[str, Any]:
    chunk = record.chunk.model_dump(mode="json")
    row: dict[str, Any] = {
        "id": record.key,
        "document_key": document_key(record.document_id),
        "document_id": record.document_id,
        "chunk_index": record.chunk.chunk_index,
        "vector": record.vector,
        "chunk": chunk,
        "metadata": chunk["metadata"],
    }
    if lexical:
        terms = record.terms or {}
        row["terms"] = dict(terms)
        row["term_ids"] = sorted(terms)
    return row
