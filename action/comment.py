"""Create or update the one pull request comment that holds the report.

    python action/comment.py [--tag NAME] [--author LOGIN] REPORT

On a pull request (``$GITHUB_EVENT_PATH`` holds a ``pull_request``), the comment starts
with a hidden marker, ``<!-- ragflow-config -->`` (``<!-- ragflow-config:NAME -->`` with
``--tag``, for several jobs each keeping its own comment). The PR's comments are listed,
page by page; the first one that starts with the marker and was written by ``--author``
(default ``github-actions[bot]``, the job token's user; ``""`` for anyone) is updated
(PATCH), else a comment is created (POST). Other comments are never touched.

Through GitHub's REST API: ``$GITHUB_API_URL`` (default https://api.github.com),
``$GITHUB_REPOSITORY`` (owner/name), the token in ``$GITHUB_TOKEN``. Standard library
only. Outside a pull request it does nothing (exit 0). Exit 1 when the API refuses or
cannot be reached, with its answer; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

DEFAULT_API = "https://api.github.com"
DEFAULT_AUTHOR = "github-actions[bot]"
LIMIT = 65536  # characters GitHub accepts in a comment's body
NOTE = "\n*(cut: the report is longer than a comment holds; the job summary has all of it)*\n"
TIMEOUT = 30


class ApiError(Exception):
    """GitHub's API refused a request or could not be reached."""


def marker(tag: str) -> str:
    return (
        "<!-- ragflow-config -->" if tag == "ragflow-config" else f"<!-- ragflow-config:{tag} -->"
    )


class GitHub:
    """The few REST calls the comment needs, with the job's token."""

    def __init__(self, api_url: str, repository: str, token: str) -> None:
        self.api_url = api_url.rstrip("/")
        self.repository = repository
        self.token = token

    def request(self, method: str, url: str, body: dict[str, Any] | None = None) -> tuple[Any, str]:
        """The answer's JSON and its Link header."""
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/vnd.github+json")
        request.add_header("Authorization", f"Bearer {self.token}")
        request.add_header("X-GitHub-Api-Version", "2022-11-28")
        request.add_header("User-Agent", "ragflow-config-action")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        shown = url.removeprefix(self.api_url)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as answer:
                payload = answer.read()
                link = answer.headers.get("Link", "")
        except urllib.error.HTTPError as exc:
            raise ApiError(f"{method} {shown}: {exc.code} {exc.reason}{explain(exc)}") from exc
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ApiError(f"{method} {shown}: cannot reach {self.api_url}: {reason}") from exc
        try:
            return (json.loads(payload) if payload else None), link
        except ValueError as exc:
            raise ApiError(f"{method} {shown}: the answer is not JSON: {payload[:200]!r}") from exc

    def comments(self, number: int) -> list[dict[str, Any]]:
        """Every comment of the issue or pull request, following the pages."""
        url: str | None = (
            f"{self.api_url}/repos/{self.repository}/issues/{number}/comments?per_page=100"
        )
        found: list[dict[str, Any]] = []
        while url:
            page, link = self.request("GET", url)
            if not isinstance(page, list):
                raise ApiError(f"GET {url}: expected a list of comments, got {type(page).__name__}")
            found.extend(page)
            url = next_page(link)
        return found

    def create(self, number: int, body: str) -> dict[str, Any]:
        url = f"{self.api_url}/repos/{self.repository}/issues/{number}/comments"
        return self.request("POST", url, {"body": body})[0]

    def update(self, comment_id: int, body: str) -> dict[str, Any]:
        url = f"{self.api_url}/repos/{self.repository}/issues/comments/{comment_id}"
        return self.request("PATCH", url, {"body": body})[0]


def explain(exc: urllib.error.HTTPError) -> str:
    """GitHub's message from an error answer, and what to do about a refused token."""
    try:
        message = json.loads(exc.read() or b"{}").get("message", "")
    except (ValueError, AttributeError, OSError):
        message = ""
    text = f": {message}" if message else ""
    if exc.code in (401, 403, 404):
        text += (
            " (the token needs `pull-requests: write` in the workflow's `permissions:`; "
            "a pull request from a fork gets a read-only token)"
        )
    return text


def next_page(link: str) -> str | None:
    """The ``rel="next"`` URL of a Link header, if any."""
    for part in link.split(","):
        match = re.match(r"\s*<([^>]+)>\s*;(.*)", part)
        if match and re.search(r'\brel="?next"?', match.group(2)):
            return match.group(1)
    return None


def pull_request_number(event_path: str) -> int | None:
    """The pull request's number from the event payload, or None for another event."""
    try:
        event = json.loads(Path(event_path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ApiError(f"cannot read the event payload {event_path}: {exc}") from exc
    pull_request = event.get("pull_request") if isinstance(event, dict) else None
    if not isinstance(pull_request, dict):
        return None
    number = pull_request.get("number", event.get("number"))
    if not isinstance(number, int):
        raise ApiError(f"the event payload {event_path} has no pull request number")
    return number


def cut(text: str, limit: int, note: str) -> str:
    if len(text) <= limit:
        return text
    head = text[: limit - len(note)]
    return head[: head.rfind("\n") + 1 or len(head)] + note


def ours(comment: dict[str, Any], mark: str, author: str) -> bool:
    body = comment.get("body") or ""
    login = (comment.get("user") or {}).get("login", "")
    return body.lstrip().startswith(mark) and (not author or login == author)


def upsert(github: GitHub, number: int, body: str, mark: str, author: str) -> tuple[str, Any]:
    """("updated" | "created", the comment)."""
    existing = next((c for c in github.comments(number) if ours(c, mark, author)), None)
    if existing is not None:
        return "updated", github.update(existing["id"], body)
    return "created", github.create(number, body)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="comment.py", description=__doc__.splitlines()[0])
    parser.add_argument("--tag", default="ragflow-config", help="the marker's name")
    parser.add_argument("--author", default=DEFAULT_AUTHOR, help="whose comment to update")
    parser.add_argument("report", type=Path)
    args = parser.parse_args(sys.argv[1:] if argv is None else argv)
    if not re.fullmatch(r"[A-Za-z0-9._-]+", args.tag):
        parser.error(f"--tag {args.tag!r}: letters, digits, '.', '_' and '-' only")
    event_path = os.environ.get("GITHUB_EVENT_PATH", "")
    repository = os.environ.get("GITHUB_REPOSITORY", "")
    token = os.environ.get("GITHUB_TOKEN", "")
    try:
        report = args.report.read_text(encoding="utf-8")
        if not event_path:
            raise ApiError("GITHUB_EVENT_PATH is not set (not in a GitHub Actions job?)")
        number = pull_request_number(event_path)
        if number is None:
            print("not a pull request event: no comment")
            return 0
        if not repository or "/" not in repository:
            raise ApiError(f"GITHUB_REPOSITORY is {repository!r}, not owner/name")
        if not token:
            raise ApiError("no token: set the action's `token` input (GITHUB_TOKEN is empty)")
        mark = marker(args.tag)
        body = cut(f"{mark}\n{report}", LIMIT, NOTE)
        api = os.environ.get("GITHUB_API_URL") or DEFAULT_API
        done, comment = upsert(GitHub(api, repository, token), number, body, mark, args.author)
    except (ApiError, OSError) as exc:
        print(f"error: the pull request comment was not written: {exc}", file=sys.stderr)
        return 1
    url = comment.get("html_url", "") if isinstance(comment, dict) else ""
    print(f"{done} the comment on pull request #{number}: {url}")
    target = os.environ.get("GITHUB_OUTPUT")
    if target:
        with open(target, "a", encoding="utf-8") as out:
            out.write(f"comment-url={url}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
