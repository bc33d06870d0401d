"""A real HTTP server on 127.0.0.1 that speaks Ollama's native API (``/api/embed``,
``/api/chat``), for the tests of the models built on the ``ollama`` package.

``/api/embed`` answers every input with ``vector_for(text)`` and counts one
prompt token per word; ``/api/chat`` answers with the next of ``replies``.
``reply`` (a function of the request number and body) may send a failure instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from _http_fake import JSONServer, Reply, Seen, fake_vector

__all__ = ["OllamaServer", "Reply", "chat_reply", "not_pulled"]


def chat_reply(content: str = "", tool_calls: list[dict[str, Any]] | None = None) -> Reply:
    """A 200 ``/api/chat`` answer, as Ollama sends one with ``stream: false``."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return Reply(
        200,
        {
            "model": "test-model",
            "created_at": "2026-01-01T00:00:00Z",
            "message": message,
            "done": True,
            "done_reason": "stop",
            "prompt_eval_count": 10,
            "eval_count": 5,
        },
    )


def not_pulled(model: str) -> Reply:
    """What Ollama answers for a model it does not have."""
    return Reply(404, {"error": f'model "{model}" not found, try pulling it first'})


class OllamaServer(JSONServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Seen] = []
        self.reply: Callable[[int, dict[str, Any]], Reply | None] = lambda number, body: None
        self.replies: list[Reply] = []  # /api/chat's answers, in order
        self.vector_length = 8
        self._lock = threading.Lock()

    @property
    def host(self) -> str:
        """The server's root, as an ``OllamaCredential`` names it."""
        return self.url.removesuffix("/v1")

    vector_for = staticmethod(fake_vector)

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self._lock:
            number = len(self.requests)
            self.requests.append(Seen(path, headers, body))
        failure = self.reply(number, body)
        if failure is not None:
            time.sleep(failure.delay)  # a slow server, for the client's timeout
            return failure
        if path == "/api/embed":
            texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
            return Reply(
                200,
                {
                    "model": body["model"],
                    "embeddings": [self.vector_for(text, self.vector_length) for text in texts],
                    "prompt_eval_count": sum(len(text.split()) for text in texts),
                },
            )
        if path == "/api/chat":
            with self._lock:
                return self.replies.pop(0)
        return Reply(404, {"error": f"no route {path}"})
