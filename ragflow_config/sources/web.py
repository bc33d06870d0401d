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
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import Field, StringConstraints, model_validator

from .._component import ComponentParameters
from .._redact import redact_url
from ._download import DownloadArea
from ._web_crawl import (
    Bounds,
    Crawl,
    PastBound,
    load_cache,
    normalized,
    save_cache,
    version_of,
)
from ._web_fetch import FetchFailed, Refused, WebFetcher, host_of
from .base import ListedFile, SourceBase, SourceListingError, SourceSpec

_CACHE = Path(".cache", "sources", "web")
_HTTP_URL = r"^https?://[^\s/@?#]+(/[^\s#]*)?$"  # no credentials in the authority, no fragment
_HOST = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9.-]+(:[0-9]{1,5})?$")]
# Types that say nothing a page's name and bytes do not: the runner detects those itself.
_GENERIC = ("", "text/plain", "application/octet-stream")


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
            description="Pages the crawl visits at most (asked for, or known unchanged from a "
            "sitemap); a site with more stops the source (nothing pruned): raise it.",
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
        return normalized(self.parameters.url or self.parameters.sitemap or "") or ""

    def origin(self, spec: SourceSpec) -> str:
        parts = urlsplit(self.start)
        return f"{parts.scheme}://{host_of(self.start)}"

    def files(self, spec: SourceSpec, folder: Path) -> Iterator[WebPage]:
        """Every page of the site that ``spec`` selects, in URL order.

        The crawl finishes before any page is yielded: a crawl that fails yields
        nothing, so no page it did not reach reads as deleted.
        """
        crawl = self._crawl(spec, folder, self.parameters.max_pages)
        save_cache(self._cache_file(folder), crawl.seen)
        yield from self._pages(spec, crawl)

    def sample(self, spec: SourceSpec, folder: Path, limit: int) -> Iterator[WebPage]:
        """The pages of a crawl stopped after ``limit`` pages (a site's larger than that
        is sampled, not refused). Its cache is not kept: the crawl is not complete."""
        yield from self._pages(spec, self._crawl(spec, folder, limit, sampling=True))

    def _crawl(
        self, spec: SourceSpec, folder: Path, max_pages: int, *, sampling: bool = False
    ) -> Crawl:
        """A crawl of the site, done: complete, or (``sampling``) stopped at ``max_pages``.

        Raises :class:`SourceListingError` when it fails, its downloads removed.
        """
        options = self.parameters
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
        bounds = Bounds(max_pages, options.max_page_bytes, options.max_depth, options.user_agent)
        crawl = Crawl(bounds, spec, fetcher, area, load_cache(self._cache_file(folder)))
        try:
            if options.sitemap:
                crawl.read_sitemap(self.start)
            else:
                crawl.follow_links(self.start)
        except PastBound:
            if not sampling:
                area.close()
                fetcher.close()
                raise SourceListingError(
                    f"source {self.origin(spec)}: the crawl failed (more than max_pages "
                    f"({max_pages:,}) pages; raise it); nothing is pruned or written"
                ) from None
        except (FetchFailed, Refused, OSError) as exc:
            area.close()
            fetcher.close()
            raise SourceListingError(
                f"source {self.origin(spec)}: the crawl failed ({exc}); nothing is pruned or "
                "written"
            ) from None
        return crawl

    def _pages(self, spec: SourceSpec, crawl: Crawl) -> Iterator[WebPage]:
        origin = self.origin(spec)
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
                fetcher=crawl.fetcher,
                area=crawl.area,
                limit=self.parameters.max_page_bytes,
            )

    def _cache_file(self, folder: Path) -> Path:
        """What the last complete crawl of this start saw, in the pipeline's cache."""
        return folder / _CACHE / f"{hashlib.sha256(self.start.encode()).hexdigest()[:16]}.json"

    def _relative(self, url: str) -> str:
        """A page as plans and documents name it: its path (and query) on the start URL's
        host, its whole URL on another allowed host; secret-looking query values masked
        (a signed link's signature is neither printed nor indexed, nor part of the id)."""
        url = redact_url(url)
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
        if version_of(fetched, data) != self.version:
            raise OSError(errno.ESTALE, "it changed since the crawl; the next run reads it")
        return data


def _declared(media_type: str) -> str | None:
    """The media type a page's server declared, unless it says no more than the page's
    name and bytes will."""
    return None if media_type in _GENERIC else media_type
