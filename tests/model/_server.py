"""A real HTTP server on 127.0.0.1 that speaks OpenAI's chat/completions wire format.

It checks each request the way OpenAI does (every assistant tool call
answered by a ``tool`` message with its id, before the next turn) and
answers with the next scripted reply.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from _http_fake import JSONServer, Reply, Seen, error_body


def completion(content: str | None = None, tool_calls: list[dict[str, Any]] | None = None) -> Reply:
    """A 200 chat.completion, as OpenAI sends it."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return Reply(
        200,
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if tool_calls else "stop",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        },
    )


def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }


def error(status: int, message: str, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, error_body(message), headers or {})


def problems(body: dict[str, Any]) -> list[str]:
    """What OpenAI would reject in this request body."""
    found: list[str] = []
    if not isinstance(body.get("model"), str):
        found.append("model is required")
    for tool in body.get("tools", []):
        function = tool.get("function", {})
        if tool.get("type") != "function" or "name" not in function or "parameters" not in function:
            found.append(f"invalid tool declaration {tool}")
    pending: set[str] = set()
    for number, message in enumerate(body.get("messages") or [None]):
        role = (message or {}).get("role")
        if role not in ("system", "user", "assistant", "tool"):
            found.append(f"messages[{number}]: invalid role {role!r}")
            continue
        if role == "tool":
            if message.get("tool_call_id") not in pending:
                found.append(f"messages[{number}]: tool message answers no pending tool call")
            pending.discard(message.get("tool_call_id"))
            continue
        if pending:
            found.append(f"messages[{number}]: tool calls {sorted(pending)} were not answered")
        content = message.get("content")
        if content is None and not message.get("tool_calls"):
            found.append(f"messages[{number}]: content is required")
        if isinstance(content, list) and any(
            p.get("type") not in ("text", "image_url") for p in content
        ):
            found.append(f"messages[{number}]: unknown content part")
        pending = {call["id"] for call in message.get("tool_calls") or []}
        if pending and role != "assistant":
            found.append(f"messages[{number}]: only assistant messages carry tool_calls")
    if pending:
        found.append(f"tool calls {sorted(pending)} were not answered")
    return found


class ChatServer(JSONServer):
    def __init__(self) -> None:
        super().__init__()
        self.requests: list[Seen] = []
        self.replies: list[Reply] = []
        self._lock = threading.Lock()

    def answer(self, path: str, headers: dict[str, str], body: dict[str, Any]) -> Reply:
        with self._lock:
            self.requests.append(Seen(path, headers, body))
            if path != "/v1/chat/completions":
                return error(404, f"no route {path}")
            found = problems(body)
            if found:
                return error(400, "; ".join(found))
            if not self.replies:
                return error(500, "the test scripted no more replies")
            return self.replies.pop(0)
