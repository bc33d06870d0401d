"""The vector search index: its definition, and a collection's index waited for until it
answers queries with every declared filter field."""

from __future__ import annotations

import asyncio
import time
from typing import Any, Literal

from ...._errors import VectorStoreError
from ._connection import MongoConnection
from ._filter import METADATA

SIMILARITY = {"cosine": "cosine", "dot": "dotProduct", "euclidean": "euclidean"}
_INDEX_POLL_SECONDS = (0.5, 5.0)  # first and longest pause between readiness checks


class MongoIndexes(MongoConnection):
    """Each collection's vector search index, checked once per open store."""

    def _dimensions(self, name: str, index: dict[str, Any]) -> int:
        dimensions = index_dimensions(index)
        if dimensions is None:
            raise VectorStoreError(
                self.store_name,
                f"search index {self.parameters.index_name!r} on {name!r} has no vector field "
                "'vector'; it was not made by this store",
            )
        return dimensions

    async def _search_index(self, name: str) -> dict[str, Any] | None:
        collection = self._collection(name)

        async def fetch() -> list[dict[str, Any]]:
            cursor = await collection.list_search_indexes(self.parameters.index_name)
            return list(await cursor.to_list())

        indexes = await self._call(fetch)
        return indexes[0] if indexes else None

    async def _ensure_queryable(self, name: str) -> None:
        """Wait until ``name``'s index answers queries with every declared filter field."""
        if name in self._queryable:
            return
        assert self._readiness is not None
        async with self._readiness:  # concurrent first searches check (and update) once
            if name not in self._queryable:
                await self._wait_until_queryable(name)

    async def _wait_until_queryable(self, name: str) -> None:
        p = self.parameters
        index = await self._search_index(name)
        if index is None:
            raise VectorStoreError(
                self.store_name,
                f"collection {name!r} has no vector search index {p.index_name!r}; "
                "create_collection creates it",
            )
        if missing_filter_fields(index, p.filter_fields):
            # Declared since the index was built: add them, keeping its dimensions.
            definition = index_definition(
                self._dimensions(name, index), p.distance, p.filter_fields
            )
            collection = self._collection(name)
            await self._call(lambda: collection.update_search_index(p.index_name, definition))
            index = {"status": "BUILDING", "queryable": False}
        deadline = time.monotonic() + p.index_timeout
        pause = _INDEX_POLL_SECONDS[0]
        while True:
            state = index_state(index)
            if state == "ready":
                self._queryable.add(name)
                return
            if state == "failed":
                raise VectorStoreError(
                    self.store_name,
                    f"search index {p.index_name!r} on {name!r} is {index.get('status')}: "
                    f"{index.get('message', 'no reason given')}",
                )
            if time.monotonic() + pause > deadline:
                raise VectorStoreError(
                    self.store_name,
                    f"search index {p.index_name!r} on {name!r} was not queryable after "
                    f"{p.index_timeout:g}s (status {index.get('status')})",
                )
            await asyncio.sleep(pause)
            pause = min(_INDEX_POLL_SECONDS[1], pause * 2)
            found = await self._search_index(name)
            index = found if found is not None else {"status": "not listed yet"}


def index_definition(
    dimensions: int, distance: str, filter_fields: tuple[str, ...]
) -> dict[str, Any]:
    """A ``vectorSearch`` index over ``vector`` with ``document_id`` and the declared filters."""
    return {
        "fields": [
            {
                "type": "vector",
                "path": "vector",
                "numDimensions": dimensions,
                "similarity": SIMILARITY[distance],
            },
            {"type": "filter", "path": "document_id"},
            *({"type": "filter", "path": f"{METADATA}{key}"} for key in filter_fields),
        ]
    }


def index_dimensions(index: dict[str, Any]) -> int | None:
    """The vector length in a ``$listSearchIndexes`` entry, if it indexes ``vector``."""
    for field in index.get("latestDefinition", {}).get("fields", []):
        if field.get("type") == "vector" and field.get("path") == "vector":
            return int(field["numDimensions"])
    return None


def missing_filter_fields(index: dict[str, Any], filter_fields: tuple[str, ...]) -> list[str]:
    """Declared fields a ``$listSearchIndexes`` entry's definition lacks (none if it shows none)."""
    if "latestDefinition" not in index:
        return []
    paths = {
        field["path"]
        for field in index["latestDefinition"].get("fields", [])
        if field.get("type") == "filter"
    }
    return [key for key in filter_fields if f"{METADATA}{key}" not in paths]


def index_state(index: dict[str, Any]) -> Literal["ready", "building", "failed"]:
    """Whether a ``$listSearchIndexes`` entry answers queries with its latest definition.

    While an updated index rebuilds it stays queryable on the old definition,
    so ``BUILDING`` is not ready even when ``queryable`` is true.
    """
    status = index.get("status")
    if status in {"FAILED", "DELETING", "DOES_NOT_EXIST"}:
        return "failed"
    if index.get("queryable") and status not in {"PENDING", "BUILDING"}:
        return "ready"
    return "building"
