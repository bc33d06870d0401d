"""A real HTTP server on 127.0.0.1 that speaks Gemini's native embedding API.

``POST /{version}/models/{model}:batchEmbedContents`` (what the ``google-genai``
SDK sends for a list of contents) gets one vector per request in
``{"embeddings": [{"values": [...]}]}``, each vector a digest of its content
and as long as the request's ``outputDimensionality`` (8 when absent). Tests
program failures (or slow answers, by their ``delay``) with ``reply``, as for
``EmbeddingServer``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from _http_fake import JSONServer, Reply, Seen, fake_vector

__all__ = ["GeminiServer", "Reply", "gemini_error"]


def gemini_error(code: int, status: str, message: str) -> dict[str, Any]:
    """A failure as Google's APIs word it."""
    return {"error": {"code": code, "message": message, "status": status}}


class GeminiServer(JSONServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Seen] = []
        self.reply: Callable[[int, dict[str, Any]], Reply | None] = lambda number, body: None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._http.server_port}"

    vector_for = staticmethod(fake_vector)

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        number = len(self.requests)
        self.requests.append(Seen(path, headers, body))
        failure = self.reply(number, body)
        if failure is not None:
            time.sleep(failure.delay)  # a slow server, for the client's timeout
            return failure
        if not path.endswith(":batchEmbedContents"):
            return Reply(404, gemini_error(404, "NOT_FOUND", f"no such path {path}"))
        embeddings = [
            {"values": self.vector_for(request["content"], request.get("outputDimensionality", 8))}
            for request in body["requests"]
        ]
        return Reply(200, {"embeddings": embeddings})
