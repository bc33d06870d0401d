"""A real HTTP server on 127.0.0.1 that speaks OpenAI's embeddings wire format.

Tests program it with ``reply``: a function of (request number, request body)
that returns a failure to send instead of embeddings, or ``None``.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import Any

from _http_fake import JSONServer, Reply, Seen, error_body, fake_vector

__all__ = ["EmbeddingServer", "Reply", "error_body"]


class EmbeddingServer(JSONServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Seen] = []
        self.reply: Callable[[int, dict[str, Any]], Reply | None] = lambda number, body: None
        self.vector_length: int | None = None  # None: the request's `dimensions`, else 8
        # Requests wait (up to 5s) until this many have been in flight at once.
        self.hold_until_in_flight: int | None = None
        self.linger = 0.0  # seconds every request stays in flight, so others can overlap it
        # As OpenAI and Ollama do: usage.total_tokens, here one per word of the input.
        self.report_usage = True
        self.in_flight = 0
        self.max_in_flight = 0
        self._state = threading.Condition()
        self._shuffle = random.Random(7)

    vector_for = staticmethod(fake_vector)

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self._state:
            number = len(self.requests)
            self.requests.append(Seen(path, headers, body))
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self._state.notify_all()
            if self.hold_until_in_flight is not None:
                self._state.wait_for(
                    lambda: self.max_in_flight >= (self.hold_until_in_flight or 0), timeout=5
                )
        try:
            reply = self.reply(number, body) or self._embeddings(body)
            time.sleep(max(reply.delay, self.linger))
            return reply
        finally:
            with self._state:
                self.in_flight -= 1

    def _embeddings(self, body: dict[str, Any]) -> Reply:
        length = self.vector_length or body.get("dimensions") or 8
        data = [
            {"object": "embedding", "index": index, "embedding": self.vector_for(text, length)}
            for index, text in enumerate(body["input"])
        ]
        self._shuffle.shuffle(data)
        answer = {"object": "list", "data": data, "model": body["model"]}
        if self.report_usage:
            tokens = sum(len(text.split()) for text in body["input"])
            answer["usage"] = {"prompt_tokens": tokens, "total_tokens": tokens}
        return Reply(200, answer)
