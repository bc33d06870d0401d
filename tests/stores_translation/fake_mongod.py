"""A minimal OP_MSG server standing in for mongod at the driver's wire boundary.

pymongo really connects, handshakes and sends its commands over TCP; the
server decodes each command (BSON body plus document sequences such as
``updates``), records it, and answers with what a test scripts, falling back
to plain successful replies. It knows nothing of queries: it only lets a test
assert the exact commands the store sends and feed back realistic answers.
"""

from __future__ import annotations

import asyncio
import datetime
import itertools
import struct
from collections.abc import Callable
from typing import Any

import bson

_OP_MSG = 2013
_CHECKSUM_PRESENT = 1
_MORE_TO_COME = 2
_HANDSHAKE = {"hello", "ismaster"}
_UNRECORDED = {*_HANDSHAKE, "endsessions"}

Respond = Callable[[str, dict[str, Any]], "dict[str, Any] | None"]


def cursor_reply(command: dict[str, Any], documents: list[dict[str, Any]]) -> dict[str, Any]:
    """A reply carrying ``documents`` as a complete (already exhausted) cursor."""
    namespace = f"{command['$db']}.{command[next(iter(command))]}"
    return {"cursor": {"id": bson.Int64(0), "ns": namespace, "firstBatch": documents}, "ok": 1.0}


def default_reply(name: str, command: dict[str, Any]) -> dict[str, Any]:
    if name in {"aggregate", "find", "listCollections"}:
        return cursor_reply(command, [])
    if name == "update":
        updates = command["updates"]
        upserted = [{"index": i, "_id": u["q"]["_id"]} for i, u in enumerate(updates)]
        return {"n": len(updates), "nModified": 0, "upserted": upserted, "ok": 1.0}
    if name == "delete":
        return {"n": 0, "ok": 1.0}
    if name == "createSearchIndexes":
        created = [
            {"id": f"index-{i}", "name": index["name"]}
            for i, index in enumerate(command["indexes"])
        ]
        return {"indexesCreated": created, "ok": 1.0}
    return {"ok": 1.0}


class FakeMongod:
    """Records commands in ``commands`` as ``(name, command)``; ``respond`` may override replies."""

    def __init__(self) -> None:
        self.commands: list[tuple[str, dict[str, Any]]] = []
        self.respond: Respond = lambda name, command: None
        self._server: asyncio.Server | None = None
        self._ids = itertools.count(1)

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)

    async def stop(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()

    @property
    def uri(self) -> str:
        assert self._server is not None
        host, port = self._server.sockets[0].getsockname()[:2]
        return f"mongodb://{host}:{port}/"

    def named(self, name: str) -> list[dict[str, Any]]:
        return [command for found, command in self.commands if found == name]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                header = await reader.readexactly(16)
                length, request_id, _, opcode = struct.unpack("<iiii", header)
                payload = await reader.readexactly(length - 16)
                if opcode != _OP_MSG:
                    raise AssertionError(f"fake mongod speaks only OP_MSG, got opcode {opcode}")
                flags, command = _decode(payload)
                name = next(iter(command))
                if name.lower() in _HANDSHAKE:
                    reply = _hello()
                elif name.lower() in _UNRECORDED:
                    reply = {"ok": 1.0}
                else:
                    self.commands.append((name, command))
                    reply = self.respond(name, command) or default_reply(name, command)
                if not flags & _MORE_TO_COME:
                    body = struct.pack("<IB", 0, 0) + bson.encode(reply)
                    writer.write(
                        struct.pack("<iiii", 16 + len(body), next(self._ids), request_id, _OP_MSG)
                        + body
                    )
                    await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _decode(payload: bytes) -> tuple[int, dict[str, Any]]:
    (flags,) = struct.unpack_from("<I", payload)
    end = len(payload) - (4 if flags & _CHECKSUM_PRESENT else 0)
    position = 4
    command: dict[str, Any] = {}
    sequences: dict[str, list[dict[str, Any]]] = {}
    while position < end:
        kind = payload[position]
        position += 1
        (size,) = struct.unpack_from("<i", payload, position)
        section = payload[position : position + size]
        position += size
        if kind == 0:
            command.update(bson.decode(section))
        else:  # a document sequence: size, identifier, documents
            identifier, _, documents = section[4:].partition(b"\0")
            sequences[identifier.decode()] = bson.decode_all(documents)
    command.update(sequences)
    return flags, command


def _hello() -> dict[str, Any]:
    return {
        "helloOk": True,
        "isWritablePrimary": True,
        "ismaster": True,
        "maxBsonObjectSize": 16 * 1024 * 1024,
        "maxMessageSizeBytes": 48_000_000,
        "maxWriteBatchSize": 100_000,
        "localTime": datetime.datetime.now(datetime.timezone.utc),
        "logicalSessionTimeoutMinutes": 30,
        "connectionId": 1,
        "minWireVersion": 0,
        "maxWireVersion": 25,
        "readOnly": False,
        "ok": 1.0,
    }


class Collections:
    """A ``respond`` that keeps documents by ``_id``, for the commands single-document
    reads and writes send: ``find`` and ``delete`` by ``_id``, ``update`` replacing a
    document (with upsert, which creates the collection), ``listCollections`` by name."""

    def __init__(self) -> None:
        self.collections: dict[str, dict[Any, dict[str, Any]]] = {}

    def __call__(self, name: str, command: dict[str, Any]) -> dict[str, Any] | None:
        if name == "listCollections":
            wanted = command.get("filter", {}).get("name")
            names = [n for n in self.collections if wanted in (None, n)]
            return cursor_reply(command, [{"name": n, "type": "collection"} for n in names])
        if name == "find":
            documents = self.collections.get(command["find"], {})
            found = documents.get(_only_id(command["filter"]))
            return cursor_reply(command, [] if found is None else [found])
        if name == "update":
            documents = self.collections.setdefault(command["update"], {})
            (update,) = command["updates"]
            if any(key.startswith("$") for key in update["u"]):
                raise AssertionError(f"fake mongod replaces documents only: {update}")
            _id = _only_id(update["q"])
            existed = _id in documents
            if not existed and not update.get("upsert"):
                return {"n": 0, "nModified": 0, "ok": 1.0}
            documents[_id] = {**update["u"], "_id": _id}
            if existed:
                return {"n": 1, "nModified": 1, "ok": 1.0}
            return {"n": 1, "nModified": 0, "upserted": [{"index": 0, "_id": _id}], "ok": 1.0}
        if name == "delete":
            documents = self.collections.get(command["delete"], {})
            (delete,) = command["deletes"]
            removed = documents.pop(_only_id(delete["q"]), None)
            return {"n": 0 if removed is None else 1, "ok": 1.0}
        return None


def _only_id(query: dict[str, Any]) -> Any:
    if set(query) != {"_id"} or isinstance(query["_id"], dict):
        raise AssertionError(f"fake mongod finds documents by _id only: {query}")
    return query["_id"]
