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
