"""A real HTTP server on 127.0.0.1 that speaks DashScope's native embedding API.

Text requests (``/services/embeddings/text-embedding/text-embedding``) and
multimodal ones (``/services/embeddings/multimodal-embedding/multimodal-embedding``)
get one vector per input, listed out of order with their indexes, as DashScope
may list them. Tests program failures with ``reply``, as for ``EmbeddingServer``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from _http_fake import JSONServer, Reply, Seen, fake_vector

__all__ = ["DashScopeServer", "Reply", "dashscope_error"]


def dashscope_error(code: str, message: str) -> dict[str, Any]:
    """A failure as DashScope words it."""
    return {"code": code, "message": message, "request_id": "req-failed"}


class DashScopeServer(JSONServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Seen] = []
        self.reply: Callable[[int, dict[str, Any]], Reply | None] = lambda number, body: None
        self.shuffle = True  # list vectors out of order, each with its index
        self._shuffle = random.Random(11)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_port}/api/v1"

    vector_for = staticmethod(fake_vector)

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        number = len(self.requests)
        self.requests.append(Seen(path, headers, body))
        failure = self.reply(number, body)
        if failure is not None:
            return failure
        length = body.get("parameters", {}).get("dimension", 8)
        if path.endswith("/text-embedding/text-embedding"):
            texts = body["input"]["texts"]
            items = [
                {"text_index": i, "embedding": self.vector_for(text, length)}
                for i, text in enumerate(texts)
            ]
            usage = {"total_tokens": sum(len(text.split()) for text in texts)}
        elif path.endswith("/multimodal-embedding/multimodal-embedding"):
            contents = body["input"]["contents"]
            items = [
                {"index": i, "embedding": self.vector_for(c, length), "type": next(iter(c))}
                for i, c in enumerate(contents)
            ]
            usage = {
                "input_tokens": sum(len(c["text"].split()) for c in contents if "text" in c),
                "image_tokens": 100 * sum("image" in c for c in contents),
            }
        else:
            return Reply(404, {"code": "NotFound", "message": f"no such path {path}"})
        if self.shuffle:
            self._shuffle.shuffle(items)
        return Reply(200, {"output": {"embeddings": items}, "usage": usage, "request_id": "r1"})
