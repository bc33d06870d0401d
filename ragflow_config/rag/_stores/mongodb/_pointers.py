"""The pointer registry: one document per pointer, replaced whole."""

from __future__ import annotations

from .._pointer import POINTER_REGISTRY, Pointer
from ._connection import MongoConnection


class MongoPointers(MongoConnection):
    """Reads and writes the pointers (``_pointer``) in the collection ``POINTER_REGISTRY``."""

    async def read_pointer(self, name: str) -> Pointer | None:
        registry = self._collection(POINTER_REGISTRY)
        # A find on a collection that does not exist finds nothing and creates nothing.
        found = await self._call(lambda: registry.find_one({"_id": name}))
        return None if found is None else Pointer.model_validate_json(found["pointer"])

    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        registry = self._collection(POINTER_REGISTRY)
        # One document per pointer, replaced whole (single-document writes are
        # atomic); the first upsert creates the collection.
        document = {"_id": name, "pointer": pointer.model_dump_json()}
        await self._call(lambda: registry.replace_one({"_id": name}, document, upsert=True))

    async def delete_pointer(self, name: str) -> None:
        registry = self._collection(POINTER_REGISTRY)
        await self._call(lambda: registry.delete_one({"_id": name}))
