"""A website source's crawl: robots.txt, links or a sitemap, and what each URL answered.

A :class:`Crawl` asks for each page once, conditionally when the last complete
crawl (its cache) knew the page, and not at all when a sitemap dates it as
then. It records what each URL answered (``seen``, the cache's next contents),
the pages it found and the bodies it downloaded; any failure raises, so a crawl
either completes or lists nothing.
"""

from __future__ import annotations

import json
import logging
import os
from collections import deque
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser
from xml.etree import ElementTree

from .._redact import redact_url
from ._download import DownloadArea
from ._web_fetch import Fetched, FetchFailed, Refused, WebFetcher, host_of
from .base import SourceSpec, content_hash

logger = logging.getLogger("ragflow_config.pipeline")

_ROBOTS_BYTES = 512 * 1024
_SITEMAP_BYTES = 50 * 1024 * 1024  # the sitemap protocol's own limit
_MAX_SITEMAPS = 100
_HTML = ("text/html", "application/xhtml+xml")
_ENTRY_KEYS = {"url", "version", "etag", "last_modified", "media_type", "size", "too_large"}


class PastBound(Exception):
    """The site holds more pages than the crawl's bound: a listing cut short."""


@dataclass(frozen=True)
class Bounds:
    """What a crawl may do: pages asked for, bytes of one page, links deep; and who it is."""

    max_pages: int
    max_page_bytes: int
    max_depth: int
    user_agent: str


class Crawl:
    """One crawl's state: what each URL answered (``seen``, the cache's next contents),
    the pages it found, and the bodies it downloaded."""

    def __init__(
        self,
        bounds: Bounds,
        spec: SourceSpec,
        fetcher: WebFetcher,
        area: DownloadArea,
        cache: dict[str, dict[str, Any]],
    ) -> None:
        self.bounds = bounds
        self.spec = spec
        self.fetcher = fetcher
        self.area = area
        self.cache = cache
        self.seen: dict[str, dict[str, Any]] = {}
        self.pages: dict[str, str] = {}  # a page's final URL -> the URL asked for
        self.bodies: dict[str, Path] = {}
        self.visited = 0
        self.robots: dict[str, RobotFileParser] = {}
        self.agent = bounds.user_agent.split()[0]

    def follow_links(self, start: str) -> None:
        """Breadth first from ``start``, ``max_depth`` links deep."""
        max_depth = self.bounds.max_depth
        queue = deque([(start, 0)])
        queued = {start}
        while queue:
            url, depth = queue.popleft()
            for link in self._visit(url, None, links=depth < max_depth):
                if link not in queued:
                    queued.add(link)
                    queue.append((link, depth + 1))

    def read_sitemap(self, sitemap: str) -> None:
        """Every page the sitemap (and the sitemaps an index lists) names."""
        listed: dict[str, str | None] = {}
        pending, read = [sitemap], 0
        while pending:
            read += 1
            if read > _MAX_SITEMAPS:
                raise FetchFailed(f"more than {_MAX_SITEMAPS} sitemaps")
            kind, entries = self._sitemap(pending.pop(0))
            for url, lastmod in entries:
                if not self.fetcher.allowed(url):
                    logger.warning("skipped %s: not on the allowed hosts", redact_url(url))
                elif kind == "sitemapindex":
                    pending.append(url)
                else:
                    listed.setdefault(url, lastmod)
        for url, lastmod in listed.items():
            self._visit(url, lastmod, links=False)

    def _visit(self, url: str, lastmod: str | None, *, links: bool) -> list[str]:
        """Ask for ``url`` (unless its sitemap date and the cache say it is as before) and
        record it; its links on the allowed hosts when ``links``."""
        if not self._robots_allow(url):
            logger.info("skipped %s: robots.txt disallows it", redact_url(url))
            return []
        entry = self.cache.get(url)
        # Every page counts, asked for or known unchanged: the bound is on the site's size.
        self.visited += 1
        if self.visited > self.bounds.max_pages:
            raise PastBound
        usable = entry is not None and (not links or entry.get("links") is not None)
        if usable and entry is not None and lastmod is not None and entry.get("lastmod") == lastmod:
            return self._record(url, entry)
        conditional: dict[str, str] = {}
        if usable and entry is not None:
            if entry.get("etag"):
                conditional["If-None-Match"] = entry["etag"]
            if entry.get("last_modified"):
                conditional["If-Modified-Since"] = entry["last_modified"]
        try:
            fetched = self.fetcher.get(
                url, area=self.area, limit=self.bounds.max_page_bytes, headers=conditional
            )
        except Refused as exc:
            # The message, not the exception: a record holding its traceback would keep
            # the crawl, and its download area, alive as long as the record.
            logger.warning("skipped a page: %s", str(exc))
            return []
        if fetched.status == 304 and usable and entry is not None:
            return self._record(url, {**entry, "lastmod": lastmod})
        if fetched.status != 200:
            if fetched.status in (304, 408):  # a 5xx or 429 fails in the fetcher, retries spent
                raise FetchFailed(f"{redact_url(url)}: HTTP {fetched.status}")
            logger.warning("skipped %s: HTTP %s", redact_url(url), fetched.status)
            return []
        return self._downloaded(url, fetched, lastmod, links)

    def _downloaded(
        self, url: str, fetched: Fetched, lastmod: str | None, links: bool
    ) -> list[str]:
        final = normalized(fetched.url) or url
        if final != url and (final in self.pages or not self._robots_allow(final)):
            if fetched.body is not None:
                fetched.body.unlink()
            return []
        data = fetched.body.read_bytes() if fetched.body is not None else b""
        media_type = fetched.headers.get("content-type", "").partition(";")[0].strip().lower()
        found = _links(final, data) if links and media_type in _HTML else []
        entry = {
            "url": final,
            "version": version_of(fetched, data),
            "etag": fetched.headers.get("etag"),
            "last_modified": fetched.headers.get("last-modified"),
            "lastmod": lastmod,
            "media_type": media_type,
            "size": len(data) if not fetched.too_large else self.bounds.max_page_bytes + 1,
            "too_large": fetched.too_large,
            "links": found if links else None,
        }
        if fetched.body is not None:
            if self._selected(final):
                self.bodies[final] = fetched.body
            else:
                fetched.body.unlink()  # crawled through for its links, not indexed
        return self._record(url, entry)

    def _record(self, url: str, entry: dict[str, Any]) -> list[str]:
        self.seen[url] = entry
        final = entry["url"]
        if self._selected(final):
            self.pages.setdefault(final, url)
        found = [link for link in entry.get("links") or [] if self.fetcher.allowed(link)]
        return found

    def _selected(self, url: str) -> bool:
        path = urlsplit(url).path.lstrip("/")
        return self.spec.selects(path + "index.html" if not path or path.endswith("/") else path)

    def _robots_allow(self, url: str) -> bool:
        host = host_of(url)
        if host not in self.robots:
            self.robots[host] = self._robots_of(url)
        return self.robots[host].can_fetch(self.agent, url)

    def _robots_of(self, url: str) -> RobotFileParser:
        parts = urlsplit(url)
        robots_url = urlunsplit((parts.scheme, parts.netloc, "/robots.txt", "", ""))
        parser = RobotFileParser(robots_url)
        fetched = self.fetcher.get(robots_url, area=self.area, limit=_ROBOTS_BYTES)
        if fetched.status == 200 and fetched.body is not None:
            text = fetched.body.read_text(encoding="utf-8", errors="replace")
            fetched.body.unlink()
            parser.parse(text.splitlines())
        elif fetched.status == 200:
            raise FetchFailed(f"{robots_url}: more than {_ROBOTS_BYTES:,} bytes")
        elif fetched.status in (401, 403):
            parser.parse(["User-agent: *", "Disallow: /"])  # as RFC 9309 reads a 401 or 403
        else:
            parser.parse([])  # none: every page may be crawled
        delay = parser.crawl_delay(self.agent)
        if delay is not None:
            self.fetcher.slow_down(min(float(delay), 60.0))
        return parser

    def _sitemap(self, url: str) -> tuple[str, list[tuple[str, str | None]]]:
        """A sitemap's kind (``urlset`` or ``sitemapindex``) and its URLs with their dates."""
        fetched = self.fetcher.get(url, area=self.area, limit=_SITEMAP_BYTES)
        if fetched.status != 200 or fetched.body is None:
            problem = "too large" if fetched.too_large else f"HTTP {fetched.status}"
            raise FetchFailed(f"sitemap {redact_url(url)}: {problem}")
        data = fetched.body.read_bytes()
        fetched.body.unlink()
        try:
            root = ElementTree.fromstring(data)
        except ElementTree.ParseError as exc:
            raise FetchFailed(f"sitemap {redact_url(url)} is not XML: {exc}") from None
        kind = _local(root.tag)
        if kind not in ("urlset", "sitemapindex"):
            raise FetchFailed(f"sitemap {redact_url(url)} holds <{kind}>, not <urlset>")
        entries = []
        for item in root:
            fields = {_local(child.tag): (child.text or "").strip() for child in item}
            if fields.get("loc") and (loc := normalized(urljoin(url, fields["loc"]))):
                entries.append((loc, fields.get("lastmod") or None))
        return kind, entries


class _Links(HTMLParser):
    """The links of a page a crawler may follow: ``<a>`` and ``<area>`` hrefs, against
    ``<base>``, none when the page says ``nofollow``."""

    def __init__(self, base: str) -> None:
        super().__init__()
        self.base = base
        self.found: list[str] = []
        self.nofollow = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        href = attributes.get("href", "").strip()
        if tag == "base" and href:
            self.base = urljoin(self.base, href)
        elif tag in ("a", "area") and href and "nofollow" not in attributes.get("rel", ""):
            self.found.append(urljoin(self.base, href))
        elif tag == "meta" and attributes.get("name", "").lower() == "robots":
            self.nofollow = self.nofollow or "nofollow" in attributes.get("content", "").lower()


def _links(url: str, data: bytes) -> list[str]:
    parser = _Links(url)
    parser.feed(data.decode("utf-8", errors="replace"))
    parser.close()
    if parser.nofollow:
        return []
    return sorted({link for found in parser.found if (link := normalized(found))})


def normalized(url: str) -> str | None:
    """``url`` without its fragment, its scheme and host in lower case, or None when it is
    not an http(s) URL."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    netloc = host_of(url) if "@" not in parts.netloc else None
    if netloc is None:
        return None  # credentials in a link: never followed
    return urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))


def version_of(fetched: Fetched, data: bytes) -> str:
    """A page's version marker: its ETag, else its Last-Modified, else its content's hash."""
    if etag := fetched.headers.get("etag"):
        return f"etag:{etag}"
    if modified := fetched.headers.get("last-modified"):
        return f"last-modified:{modified}"
    return f"sha256:{content_hash(data)}"


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def load_cache(path: Path) -> dict[str, dict[str, Any]]:
    """What each URL answered at the last complete crawl; nothing when unreadable (every
    page is then asked for unconditionally)."""
    try:
        loaded = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(loaded, dict):
        return {}
    return {
        url: entry
        for url, entry in loaded.items()
        if isinstance(entry, dict) and entry.keys() >= _ENTRY_KEYS
    }


def save_cache(path: Path, seen: dict[str, dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(seen, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)
