"""A website as a source: the pages a crawl from a start URL reaches, or a sitemap lists.

The crawl honours ``robots.txt`` (its ``Crawl-delay`` too), stays on the
allowed hosts and the start URL's scheme, never follows a redirect elsewhere,
and is bounded in pages, bytes per page, depth and requests per second. A page's
identity is its URL, its version marker its ``ETag`` (else ``Last-Modified``,
else its content hash). What each page answered is kept in the pipeline's
``.cache/sources/web/``: a page a sitemap dates as before is not asked for at
all, the others are asked conditionally (``If-None-Match`` /
``If-Modified-Since``), so an unchanged site answers 304s and nothing is
downloaded. The content hash stays the truth for whatever is fetched.

Only a complete crawl lists: a page that fails for good (a 5xx or the network,
retries spent), a ``robots.txt`` or sitemap that cannot be read, or more pages
than ``max_pages`` stops the source, and nothing is pruned.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import os
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import urljoin, urlsplit, urlunsplit
from urllib.robotparser import RobotFileParser
from xml.etree import ElementTree

from pydantic import Field, StringConstraints, model_validator

from .._component import ComponentParameters
from .._redact import redact_url
from ._download import DownloadArea
from ._web_fetch import Fetched, FetchFailed, Refused, WebFetcher, host_of
from .base import ListedFile, SourceBase, SourceListingError, SourceSpec, content_hash

logger = logging.getLogger("ragflow_config.pipeline")

_CACHE = Path(".cache", "sources", "web")
_HTTP_URL = r"^https?://[^\s/@?#]+(/[^\s#]*)?$"  # no credentials in the authority, no fragment
_HOST = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$")]
_ROBOTS_BYTES = 512 * 1024
_SITEMAP_BYTES = 50 * 1024 * 1024  # the sitemap protocol's own limit
_MAX_SITEMAPS = 100
_HTML = ("text/html", "application/xhtml+xml")
# Types that say nothing a page's name and bytes do not: the runner detects those itself.
_GENERIC = ("", "text/plain", "application/octet-stream")
_ENTRY_KEYS = {"url", "version", "etag", "last_modified", "media_type", "size", "too_large"}


class WebSource(SourceBase):
    """The pages of a website: crawled from `url`, or listed by a `sitemap`."""

    class Parameters(ComponentParameters):
        url: str | None = Field(
            default=None,
            pattern=_HTTP_URL,
            description="The page the crawl starts from (`https://docs.example.com/`); links are "
            "followed on the allowed hosts, over its scheme.",
        )
        sitemap: str | None = Field(
            default=None,
            pattern=_HTTP_URL,
            description="A `sitemap.xml` (or a sitemap index) listing the pages, instead of "
            "`url`: its `lastmod` dates spare the requests of pages dated as before.",
        )
        allowed_hosts: list[_HOST] = Field(
            default_factory=list,
            description="Hosts (`docs.example.com`, `host:8080`) whose pages belong to the "
            "source, beside the host of `url` or `sitemap`.",
        )
        allow_private_hosts: list[_HOST] = Field(
            default_factory=list,
            description="Host names allowed to resolve to a private, loopback or link-local "
            "address (an intranet wiki, `127.0.0.1` in tests); any other such host is refused, "
            "so a pipeline file cannot aim the crawler at the runner's network.",
        )
        max_pages: int = Field(
            default=1000,
            ge=1,
            le=100_000,
            description="Pages requested at most; a site with more stops the source (nothing "
            "pruned): raise it, or narrow the sitemap.",
        )
        max_page_bytes: int = Field(
            default=5_000_000,
            ge=1,
            le=100_000_000,
            description="Bytes of one page at most; a larger page is reported unreadable and "
            "what the store holds of it stays.",
        )
        max_depth: int = Field(
            default=5,
            ge=0,
            le=100,
            description="Links followed from the start page at most (0: the start page alone); "
            "not used with `sitemap`.",
        )
        max_download_bytes: int = Field(
            default=1 << 30,
            ge=1,
            le=1 << 40,
            description="Bytes the crawl may hold downloaded at once, in a temporary folder "
            "removed after the run.",
        )
        requests_per_second: float = Field(
            default=2,
            gt=0,
            le=100,
            description="Requests a second at most (a robots.txt `Crawl-delay` slows it more).",
        )
        max_retries: int = Field(
            default=3,
            ge=0,
            le=10,
            description="Retries of a request that got a 429, a 5xx or a network failure; a "
            "request that still fails stops the source, and prunes nothing.",
        )
        max_retry_after_seconds: float = Field(
            default=30,
            ge=0,
            le=30,
            description="The longest wait before a retry, whatever a `Retry-After` asks.",
        )
        timeout_seconds: float = Field(
            default=30, gt=0, le=600, description="Time allowed to each request."
        )
        user_agent: str = Field(
            default="ragflow-config",
            pattern=r"^[!-~][ -~]{0,199}$",
            description="The crawler's `User-Agent`; its first word is the name robots.txt "
            "rules are matched against.",
        )

        @model_validator(mode="after")
        def _one_start(self) -> WebSource.Parameters:
            if (self.url is None) == (self.sitemap is None):
                raise ValueError(
                    "give `url` (a page to crawl from) or `sitemap` (a sitemap.xml), not both"
                )
            return self

    parameters: Parameters

    @property
    def start(self) -> str:
        return _normalized(self.parameters.url or self.parameters.sitemap or "") or ""

    def origin(self, spec: SourceSpec) -> str:
        parts = urlsplit(self.start)
        return f"{parts.scheme}://{host_of(self.start)}"

    def files(self, spec: SourceSpec, folder: Path) -> Iterator[WebPage]:
        """Every page of the site that ``spec`` selects, in URL order.

        The crawl finishes before any page is yielded: a crawl that fails yields
        nothing, so no page it did not reach reads as deleted.
        """
        origin = self.origin(spec)
        options = self.parameters
        cache_file = (
            folder / _CACHE / f"{hashlib.sha256(self.start.encode()).hexdigest()[:16]}.json"
        )
        fetcher = WebFetcher(
            scheme=urlsplit(self.start).scheme,
            hosts=frozenset({host_of(self.start), *(h.lower() for h in options.allowed_hosts)}),
            private_hosts=frozenset(h.lower() for h in options.allow_private_hosts),
            requests_per_second=options.requests_per_second,
            max_retries=options.max_retries,
            max_retry_after=options.max_retry_after_seconds,
            timeout=options.timeout_seconds,
            user_agent=options.user_agent,
        )
        area = DownloadArea(options.max_download_bytes)
        crawl = _Crawl(self, spec, fetcher, area, _load(cache_file))
        try:
            if options.sitemap:
                crawl.read_sitemap(self.start)
            else:
                crawl.follow_links(self.start)
        except (FetchFailed, Refused, OSError) as exc:
            area.close()
            fetcher.close()
            raise SourceListingError(
                f"source {origin}: the crawl failed ({exc}); nothing is pruned or written"
            ) from None
        _save(cache_file, crawl.seen)
        for url in sorted(crawl.pages):
            entry = crawl.seen[crawl.pages[url]]
            yield WebPage(
                source=spec,
                origin=origin,
                relative=self._relative(url),
                url=url,
                version=entry["version"],
                listed_size=entry["size"],
                media_type=_declared(entry["media_type"]),
                body=crawl.bodies.get(url),
                too_large=entry["too_large"],
                fetcher=fetcher,
                area=area,
                limit=options.max_page_bytes,
            )

    def _relative(self, url: str) -> str:
        """A page as plans and documents name it: its path (and query) on the start URL's
        host, its whole URL on another allowed host."""
        parts = urlsplit(url)
        if host_of(url) != host_of(self.start):
            return url
        return parts.path + (f"?{parts.query}" if parts.query else "")


@dataclass(frozen=True, kw_only=True)
class WebPage(ListedFile):
    """A page as the crawl left it: downloaded to the area (a 200), or known unchanged (a 304)."""

    url: str
    media_type: str | None
    body: Path | None
    too_large: bool
    fetcher: WebFetcher
    area: DownloadArea
    limit: int

    def read(self) -> bytes:
        """The page's bytes: from the download area, else asked again; a page whose version
        is no longer the listed one fails to read (the next run reads it)."""
        if self.too_large:
            raise OSError(errno.EFBIG, f"more than max_page_bytes ({self.limit:,} bytes)")
        if self.body is not None and self.body.exists():
            return self.body.read_bytes()
        try:
            fetched = self.fetcher.get(self.url, area=self.area, limit=self.limit)
        except (FetchFailed, Refused) as exc:
            raise OSError(errno.EIO, str(exc)) from None
        if fetched.status != 200 or fetched.body is None:
            problem = "too large" if fetched.too_large else f"HTTP {fetched.status}"
            raise OSError(errno.EIO, f"{redact_url(self.url)}: {problem}")
        data = fetched.body.read_bytes()
        fetched.body.unlink()
        if _version(fetched, data) != self.version:
            raise OSError(errno.ESTALE, "it changed since the crawl; the next run reads it")
        return data


class _Crawl:
    """One crawl's state: what each URL answered (``seen``, the cache's next contents),
    the pages it found, and the bodies it downloaded."""

    def __init__(
        self,
        kind: WebSource,
        spec: SourceSpec,
        fetcher: WebFetcher,
        area: DownloadArea,
        cache: dict[str, dict[str, Any]],
    ) -> None:
        self.kind = kind
        self.spec = spec
        self.fetcher = fetcher
        self.area = area
        self.cache = cache
        self.seen: dict[str, dict[str, Any]] = {}
        self.pages: dict[str, str] = {}  # a page's final URL -> the URL asked for
        self.bodies: dict[str, Path] = {}
        self.requested = 0
        self.robots: dict[str, RobotFileParser] = {}
        self.agent = kind.parameters.user_agent.split()[0]

    def follow_links(self, start: str) -> None:
        """Breadth first from ``start``, ``max_depth`` links deep."""
        max_depth = self.kind.parameters.max_depth
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
        usable = entry is not None and (not links or entry.get("links") is not None)
        if usable and entry is not None and lastmod is not None and entry.get("lastmod") == lastmod:
            return self._record(url, entry)
        self.requested += 1
        if self.requested > self.kind.parameters.max_pages:
            raise FetchFailed(
                f"more than max_pages ({self.kind.parameters.max_pages:,}) pages; raise it"
            )
        conditional: dict[str, str] = {}
        if usable and entry is not None:
            if entry.get("etag"):
                conditional["If-None-Match"] = entry["etag"]
            if entry.get("last_modified"):
                conditional["If-Modified-Since"] = entry["last_modified"]
        try:
            fetched = self.fetcher.get(
                url, area=self.area, limit=self.kind.parameters.max_page_bytes, headers=conditional
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
        final = _normalized(fetched.url) or url
        if final != url and (final in self.pages or not self._robots_allow(final)):
            if fetched.body is not None:
                fetched.body.unlink()
            return []
        data = fetched.body.read_bytes() if fetched.body is not None else b""
        media_type = fetched.headers.get("content-type", "").partition(";")[0].strip().lower()
        found = _links(final, data) if links and media_type in _HTML else []
        entry = {
            "url": final,
            "version": _version(fetched, data),
            "etag": fetched.headers.get("etag"),
            "last_modified": fetched.headers.get("last-modified"),
            "lastmod": lastmod,
            "media_type": media_type,
            "size": len(data) if not fetched.too_large else self.kind.parameters.max_page_bytes + 1,
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
            if fields.get("loc") and (loc := _normalized(urljoin(url, fields["loc"]))):
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
    return sorted({link for found in parser.found if (link := _normalized(found))})


def _normalized(url: str) -> str | None:
    """``url`` without its fragment, its scheme and host in lower case, or None when it is
    not an http(s) URL."""
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        return None
    netloc = host_of(url) if "@" not in parts.netloc else None
    if netloc is None:
        return None  # credentials in a link: never followed
    return urlunsplit((parts.scheme.lower(), netloc, parts.path or "/", parts.query, ""))


def _version(fetched: Fetched, data: bytes) -> str:
    """A page's version marker: its ETag, else its Last-Modified, else its content's hash."""
    if etag := fetched.headers.get("etag"):
        return f"etag:{etag}"
    if modified := fetched.headers.get("last-modified"):
        return f"last-modified:{modified}"
    return f"sha256:{content_hash(data)}"


def _declared(media_type: str) -> str | None:
    """The media type a page's server declared, unless it says no more than the page's
    name and bytes will."""
    return None if media_type in _GENERIC else media_type


def _local(tag: str) -> str:
    return tag.rpartition("}")[2]


def _load(path: Path) -> dict[str, dict[str, Any]]:
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


def _save(path: Path, seen: dict[str, dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_suffix(f".{os.getpid()}.tmp")
    partial.write_text(json.dumps(seen, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)
