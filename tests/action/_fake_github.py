"""A fake of the few GitHub REST API routes the action's comment uses, on loopback.

It checks every request as GitHub would take it (the token, the headers, the path, the
JSON body) and records what does not match in ``problems``, which a test asserts empty.
Comments are listed in pages of ``per_page`` (at most 100, GitHub's limit) with a Link
header, as GitHub pages them.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

BOT = "github-actions[bot]"
PREFIX = "/api/v3"  # as on GitHub Enterprise Server: the scripts must keep the URL's path


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    body: Any


@dataclass
class FakeGitHub:
    token: str
    repository: str
    number: int
    comments: list[dict[str, Any]] = field(default_factory=list)
    requests: list[Request] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    # (status, JSON body) answered to every request instead, to test failures.
    fail_with: tuple[int, dict[str, Any]] | None = None
    next_id: int = 1000
    url: str = ""

    def add_comment(self, body: str, login: str) -> dict[str, Any]:
        self.next_id += 1
        comment = {
            "id": self.next_id,
            "body": body,
            "user": {"login": login, "type": "Bot" if login.endswith("[bot]") else "User"},
            "html_url": f"https://github.com/{self.repository}/pull/{self.number}#issuecomment-{self.next_id}",
        }
        self.comments.append(comment)
        return comment

    def ours(self) -> list[dict[str, Any]]:
        return [c for c in self.comments if c["user"]["login"] == BOT]

    def calls(self) -> list[tuple[str, str]]:
        return [(r.method, r.path) for r in self.requests]


def _handler(fake: FakeGitHub) -> type[BaseHTTPRequestHandler]:
    comments_path = f"{PREFIX}/repos/{fake.repository}/issues/{fake.number}/comments"
    comment_path = re.compile(
        rf"{re.escape(PREFIX)}/repos/{re.escape(fake.repository)}/issues/comments/(\d+)"
    )

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def answer(self, status: int, payload: Any, headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def problem(self, status: int, text: str) -> None:
            fake.problems.append(f"{self.command} {self.path}: {text}")
            self.answer(status, {"message": text})

        def handle_one(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if length else b""
            body = None
            if raw:
                try:
                    body = json.loads(raw)
                except ValueError:
                    return self.problem(400, f"body is not JSON: {raw[:100]!r}")
            fake.requests.append(Request(self.command, parts.path, parse_qs(parts.query), body))
            if self.headers.get("Authorization") != f"Bearer {fake.token}":
                return self.problem(401, f"Authorization: {self.headers.get('Authorization')!r}")
            if self.headers.get("Accept") != "application/vnd.github+json":
                return self.problem(415, f"Accept: {self.headers.get('Accept')!r}")
            if not self.headers.get("X-GitHub-Api-Version"):
                return self.problem(400, "no X-GitHub-Api-Version header")
            if not self.headers.get("User-Agent"):
                return self.problem(403, "no User-Agent header")  # GitHub refuses these
            if fake.fail_with is not None:
                return self.answer(*fake.fail_with)
            if self.command in ("POST", "PATCH"):
                if self.headers.get("Content-Type") != "application/json":
                    return self.problem(415, f"Content-Type: {self.headers.get('Content-Type')!r}")
                if (
                    not isinstance(body, dict)
                    or set(body) != {"body"}
                    or not isinstance(body["body"], str)
                ):
                    return self.problem(422, f"expected {{'body': str}}, got {body!r}")
            if parts.path == comments_path and self.command == "GET":
                return self.list_comments(parse_qs(parts.query))
            if parts.path == comments_path and self.command == "POST":
                assert isinstance(body, dict)
                return self.answer(201, fake.add_comment(body["body"], BOT))
            match = comment_path.fullmatch(parts.path)
            if match and self.command == "PATCH":
                assert isinstance(body, dict)
                found = [c for c in fake.comments if c["id"] == int(match.group(1))]
                if not found:
                    return self.problem(404, "no such comment")
                if found[0]["user"]["login"] != BOT:
                    return self.problem(403, "updating another user's comment")
                found[0]["body"] = body["body"]
                return self.answer(200, found[0])
            return self.problem(404, "no such route")

        def list_comments(self, query: dict[str, list[str]]) -> None:
            try:
                per_page = min(int(query.get("per_page", ["30"])[0]), 100)
                page = int(query.get("page", ["1"])[0])
            except ValueError:
                return self.problem(422, f"bad paging: {query}")
            start = (page - 1) * per_page
            items = fake.comments[start : start + per_page]
            headers = {}
            last = max(1, -(-len(fake.comments) // per_page))
            if page < last:
                base = f"{fake.url}{comments_path}?per_page={per_page}"
                headers["Link"] = (
                    f'<{base}&page={page + 1}>; rel="next", <{base}&page={last}>; rel="last"'
                )
            self.answer(200, items, headers)

        do_GET = do_POST = do_PATCH = do_DELETE = do_PUT = handle_one

    return Handler


class FakeGitHubServer:
    """``with FakeGitHubServer(fake) as api_url:`` serves ``fake`` on 127.0.0.1."""

    def __init__(self, fake: FakeGitHub) -> None:
        self.fake = fake
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(fake))
        fake.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        return self.fake.url + PREFIX

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()
