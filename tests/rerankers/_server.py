"""A real HTTP server on 127.0.0.1 that reranks in TEI's and Cohere's (Jina's) wire formats.

A passage's score is the number of the query's words it contains, so a test
knows the order to expect; the hits are sent back last passage first, so a
client that ignored their indexes would get the scores wrong.
"""

from __future__ import annotations

import re
from typing import Any

from _http_fake import JSONServer, Reply, Seen, error_body


def overlap(query: str, passage: str) -> float:
    words = set(re.findall(r"\w+", query.lower()))
    return float(sum(1 for word in set(re.findall(r"\w+", passage.lower())) if word in words))


class RerankServer(JSONServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Seen] = []
        self.required_key: str | None = None  # answer 401 to a request without this bearer key
        self.drop_last = False  # leave the last passage unscored
        self.busy = 0  # answer this many requests 503 first

    @property
    def root(self) -> str:
        """The base URL of a TEI server: no ``/v1``."""
        return self.url.removesuffix("/v1")

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        self.requests.append(Seen(path, headers, body))
        if len(self.requests) <= self.busy:
            return Reply(503, error_body("overloaded"))
        if self.required_key and headers.get("authorization") != f"Bearer {self.required_key}":
            return Reply(401, error_body("invalid api key"))
        texts = body["texts"] if "texts" in body else body["documents"]
        scored = [(i, overlap(body["query"], text)) for i, text in enumerate(texts)][::-1]
        if self.drop_last:
            scored = [pair for pair in scored if pair[0] != len(texts) - 1]
        if path == "/rerank":
            return Reply(200, [{"index": i, "score": s} for i, s in scored])
        if path == "/v1/rerank":
            return Reply(200, {"results": [{"index": i, "relevance_score": s} for i, s in scored]})
        return Reply(404, error_body(f"no route {path}"))
