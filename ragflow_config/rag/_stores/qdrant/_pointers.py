"""The pointer registry: each knowledge base's pointer, a point in a collection of its own."""

from __future__ import annotations

import uuid

from .._pointer import POINTER_REGISTRY, Pointer
from ._connection import QdrantConnection


class QdrantPointers(QdrantConnection):
    """Reads and writes the pointers (``_pointer``) in the collection ``POINTER_REGISTRY``."""

    async def read_pointer(self, name: str) -> Pointer | None:
        async def ask() -> Pointer | None:
            if not await self.has_collection(POINTER_REGISTRY):
                return None
            found = await self._call(
                lambda: self.client.retrieve(
                    collection_name=POINTER_REGISTRY, ids=[_pointer_id(name)], with_payload=True
                )
            )
            return Pointer.model_validate_json(found[0].payload["pointer"]) if found else None

        return await self._remembered(
            ["read_pointer", name],
            ask,
            lambda pointer: None if pointer is None else pointer.model_dump(mode="json"),
            lambda kept: None if kept is None else Pointer.model_validate(kept),
        )

    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        # One point per pointer, in a collection of its own: an upsert replaces it whole.
        self._wrote = True
        models = self._models()
        if not await self.has_collection(POINTER_REGISTRY):
            await self.create_collection(POINTER_REGISTRY, 1)
        point = models.PointStruct(
            id=_pointer_id(name),
            vector=[1.0],
            payload={"name": name, "pointer": pointer.model_dump_json()},
        )
        await self._call(
            lambda: self.client.upsert(collection_name=POINTER_REGISTRY, points=[point], wait=True)
        )

    async def delete_pointer(self, name: str) -> None:
        if not await self.has_collection(POINTER_REGISTRY):
            return
        self._wrote = True
        models = self._models()
        await self._call(
            lambda: self.client.delete(
                collection_name=POINTER_REGISTRY,
                points_selector=models.PointIdsList(points=[_pointer_id(name)]),
                wait=True,
            )
        )


def _pointer_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragflow-pointer:{name}"))
