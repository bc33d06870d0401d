"""The pointer registry: one document per pointer in an index of its own."""

from __future__ import annotations

from .._pointer import POINTER_REGISTRY, Pointer
from ._connection import ElasticsearchConnection
from ._mappings import POINTER_MAPPINGS


class ElasticsearchPointers(ElasticsearchConnection):
    """Reads and writes the pointers (``_pointer``) in the index ``POINTER_REGISTRY``."""

    async def read_pointer(self, name: str) -> Pointer | None:
        # A GET by id is realtime (no refresh needed) and never creates the index;
        # 404 is either no such pointer or no registry.
        response = await self._call(
            lambda: self.client.options(ignore_status=404).get(
                index=POINTER_REGISTRY, id=name, source=["pointer"]
            )
        )
        assert response is not None
        body = response.body
        if not body.get("found"):
            return None
        return Pointer.model_validate(body["_source"]["pointer"])

    async def write_pointer(self, name: str, pointer: Pointer) -> None:
        # One document per pointer, indexed whole: ES replaces a document atomically.
        if not await self.has_collection(POINTER_REGISTRY):
            await self._call(
                lambda: self.client.indices.create(
                    index=POINTER_REGISTRY, mappings=POINTER_MAPPINGS
                ),
                tolerate=frozenset({"resource_already_exists_exception"}),  # a concurrent create
            )
        document = {"name": name, "pointer": pointer.model_dump(mode="json")}
        await self._call(
            lambda: self.client.index(
                index=POINTER_REGISTRY, id=name, document=document, refresh=self.parameters.refresh
            )
        )

    async def delete_pointer(self, name: str) -> None:
        if not await self.has_collection(POINTER_REGISTRY):
            return  # a delete must not be what creates the registry
        await self._call(
            lambda: self.client.options(ignore_status=404).delete(  # no such pointer
                index=POINTER_REGISTRY, id=name, refresh=self.parameters.refresh
            )
        )
