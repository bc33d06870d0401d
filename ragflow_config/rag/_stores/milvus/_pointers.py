"""The pointer registry: each version of a pointer an entity of a collection of its own."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from ...._errors import VectorStoreError
from ...._extras import require
from .._pointer import POINTER_REGISTRY, Pointer
from ._connection import MAX_VARCHAR, MilvusConnection
from ._names import milvus_name, pointer_key


class MilvusPointers(MilvusConnection):
    """Reads and writes the pointers (``_pointer``) in the collection ``POINTER_REGISTRY``.

    Pointers: one entity per write in the registry, never replaced in place.
    Milvus Lite runs an upsert as a delete stamped at the present and an
    insert stamped just after it, so a read in between found no pointer at
    all (measured: 82 of 377 reads during 200 upserts, two stores on one
    file). So a write inserts a new version beside the old, waits until it
    is visible, and only then deletes the old; a read takes the latest
    version it sees, and sees the old one or the new one, never none.
    """

    async def read_pointer(self, name: str) -> Pointer | None:
        if not await self.has_collection(POINTER_REGISTRY):
            return None
        await self._load_registry()
        rows = [row for row in await self._pointer_versions(name) if row["name"] == name]
        if not rows:
            return None
        latest = max(rows, key=lambda row: (row["version"], row["id"]))
        return Pointer.model_validate_json(latest["pointer"])

    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        text = pointer.model_dump_json()
        for what, value in (("name", name), ("record", text)):
            if len(value.encode()) > MAX_VARCHAR:
                raise VectorStoreError(
                    self.store_name,
                    f"pointer {name[:80]!r}: its {what} is longer than Milvus's VARCHAR limit "
                    f"of {MAX_VARCHAR} bytes",
                )
        if not await self.has_collection(POINTER_REGISTRY):
            await self._create_registry()
        await self._load_registry()
        key = pointer_key(name)
        older = await self._pointer_versions(name)
        version = max((int(row["version"]) for row in older), default=0) + 1
        # The nonce keeps two concurrent writers' entities apart; the later id wins a tie.
        row_id = f"{key}:{version:020d}:{uuid.uuid4().hex}"
        row = {
            "id": row_id,
            "key": key,
            "version": version,
            "name": name,
            "pointer": text,
            "vector": [1.0, 0.0],
        }
        await self._upsert(POINTER_REGISTRY, [row])  # a new id: nothing to delete first
        await self._until_visible(row_id)
        if older:
            stale = [str(old["id"]) for old in older]  # hex digits and ':', nothing to escape
            await self._call(
                lambda client: client.delete(
                    milvus_name(POINTER_REGISTRY), ids=stale, timeout=self.parameters.timeout
                )
            )

    async def delete_pointer(self, name: str) -> None:
        if not await self.has_collection(POINTER_REGISTRY):
            return
        await self._load_registry()
        key = pointer_key(name)
        await self._call(
            lambda client: client.delete(
                milvus_name(POINTER_REGISTRY),
                filter=f'key == "{key}"',  # a hex digest: nothing to escape
                timeout=self.parameters.timeout,
            )
        )

    async def _pointer_versions(self, name: str) -> list[Any]:
        """Every stored version of the pointer ``name`` (more than one only mid-write)."""
        key = pointer_key(name)
        return list(
            await self._call(
                lambda client: client.query(
                    milvus_name(POINTER_REGISTRY),
                    filter=f'key == "{key}"',
                    output_fields=["id", "version", "name", "pointer"],
                    timeout=self.parameters.timeout,
                    consistency_level="Strong",
                )
            )
        )

    async def _until_visible(self, row_id: str) -> None:
        """Return once a read finds the entity ``row_id``, just inserted."""
        deadline = time.monotonic() + self.parameters.timeout
        pause = 0.001
        while True:
            found = await self._call(
                lambda client: client.query(
                    milvus_name(POINTER_REGISTRY),
                    filter=f'id == "{row_id}"',
                    output_fields=["id"],
                    timeout=self.parameters.timeout,
                    consistency_level="Strong",
                )
            )
            if found:
                return
            if time.monotonic() + pause > deadline:
                raise VectorStoreError(
                    self.store_name,
                    f"a pointer written to {POINTER_REGISTRY!r} was not readable after "
                    f"{self.parameters.timeout:g}s",
                )
            await asyncio.sleep(pause)
            pause = min(0.1, pause * 2)

    async def _create_registry(self) -> None:
        """The pointer registry: a version of a pointer per entity, and the vector Milvus requires."""
        pymilvus = require("pymilvus", "milvus")
        DataType = pymilvus.DataType
        schema = pymilvus.AsyncMilvusClient.create_schema(auto_id=False, enable_dynamic_field=False)
        schema.add_field("id", DataType.VARCHAR, max_length=128, is_primary=True)
        schema.add_field("key", DataType.VARCHAR, max_length=64)  # the name's digest
        schema.add_field("version", DataType.INT64)
        schema.add_field("name", DataType.VARCHAR, max_length=MAX_VARCHAR)
        schema.add_field("pointer", DataType.VARCHAR, max_length=MAX_VARCHAR)
        schema.add_field("vector", DataType.FLOAT_VECTOR, dim=2)
        index_params = pymilvus.AsyncMilvusClient.prepare_index_params()
        index_params.add_index(field_name="vector", index_type="AUTOINDEX", metric_type="L2")
        await self._call(
            lambda client: client.create_collection(
                milvus_name(POINTER_REGISTRY),
                schema=schema,
                index_params=index_params,
                consistency_level="Strong",
                timeout=self.parameters.timeout,
            )
        )
        self._registry_loaded = True

    async def _load_registry(self) -> None:
        """Load the registry once per open store: a restarted server may have released it."""
        if self._registry_loaded:
            return
        await self._call(
            lambda client: client.load_collection(
                milvus_name(POINTER_REGISTRY), timeout=self.parameters.timeout
            )
        )
        self._registry_loaded = True
