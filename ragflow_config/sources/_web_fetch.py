"""HTTP as a website source makes it: polite, bounded, and confined to the allowed hosts.

Every request, redirects included, goes to an allowed host over the source's
own scheme, and to a public address unless its host is allowed private by
name. Requests are spaced to the source's rate; a 429, a 5xx or a network
failure is tried again (waiting the server's ``Retry-After``, bounded) a
bounded number of times; a body is streamed to the download area and cut at
the page bound.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import httpx

from .._http import is_transient, retry_after
from .._redact import redact_url
from ._download import DownloadArea

_MAX_REDIRECTS = 5
_REDIRECTS = (301, 302, 303, 307, 308)


class FetchFailed(Exception):
    """A request that failed for good, retries spent: what it would have listed is unknown."""


class Refused(Exception):
    """A URL the source must not reach: another host or scheme, or a private address."""


@dataclass(frozen=True)
class Fetched:
    """A response: its final URL (after redirects on the host), status, headers, and a
    200's body in the download area (None past the bound: ``too_large``)."""

    url: str
    status: int
    headers: httpx.Headers
    body: Path | None = None
    too_large: bool = False


def host_of(url: str) -> str:
    """``host[:port]`` as a URL names it, lower case, without the scheme's default port."""
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    default = {"http": 80, "https": 443}.get(parts.scheme)
    port = parts.port
    return host if port is None or port == default else f"{host}:{port}"


class WebFetcher:
    """GET requests to the allowed hosts, spaced, retried and bounded (thread-safe)."""

    def __init__(
        self,
        *,
        scheme: str,
        hosts: frozenset[str],
        private_hosts: frozenset[str],
        requests_per_second: float,
        max_retries: int,
        max_retry_after: float,
        timeout: float,
        user_agent: str,
    ) -> None:
        self.scheme = scheme
        self.hosts = hosts
        self.private_hosts = private_hosts
        self.max_retries = max_retries
        self.max_retry_after = max_retry_after
        self.interval = 1 / requests_per_second
        self.requests = 0
        self._lock = threading.Lock()
        self._next_slot = 0.0
        self._checked: set[str] = set()
        # No redirects followed by the client (each hop is checked here), no proxy from the
        # environment (the address checks must be about the host the request reaches).
        self._client = httpx.Client(
            timeout=timeout,
            follow_redirects=False,
            trust_env=False,
            headers={"User-Agent": user_agent},
        )

    def allowed(self, url: str) -> bool:
        """Whether ``url`` is on an allowed host, over the source's scheme."""
        return urlsplit(url).scheme == self.scheme and host_of(url) in self.hosts

    def slow_down(self, seconds: float) -> None:
        """Space requests at least ``seconds`` apart (a robots.txt ``Crawl-delay``)."""
        self.interval = max(self.interval, seconds)

    def get(
        self,
        url: str,
        *,
        area: DownloadArea | None,
        limit: int,
        headers: Mapping[str, str] | None = None,
    ) -> Fetched:
        """``url``, following redirects that stay on its host and scheme.

        Raises :class:`Refused` for a redirect elsewhere (or a private address) and
        :class:`FetchFailed` once the retries are spent.
        """
        for _ in range(_MAX_REDIRECTS + 1):
            fetched = self._get_once(url, area, limit, headers or {})
            if fetched.status not in _REDIRECTS or "location" not in fetched.headers:
                return fetched
            target = urljoin(url, fetched.headers["location"])
            if host_of(target) != host_of(url) or urlsplit(target).scheme != self.scheme:
                raise Refused(
                    f"{redact_url(url)} redirects to {redact_url(target)}, another host or "
                    "scheme: not followed"
                )
            url = target.partition("#")[0]
        raise FetchFailed(f"{redact_url(url)}: more than {_MAX_REDIRECTS} redirects")

    def close(self) -> None:
        self._client.close()

    def _get_once(
        self, url: str, area: DownloadArea | None, limit: int, headers: Mapping[str, str]
    ) -> Fetched:
        if not self.allowed(url):
            raise Refused(f"{redact_url(url)} is not on the allowed hosts")
        self._check_address(url)
        for attempt in range(self.max_retries + 1):
            self._wait_turn()
            wait = min(0.5 * 2**attempt, 10.0)
            try:
                with self._client.stream("GET", url, headers=headers) as response:
                    if not is_transient(response.status_code):
                        return self._fetched(url, response, area, limit)
                    problem = f"HTTP {response.status_code}"
                    asked = retry_after(response.headers)
                    if asked is not None:
                        wait = min(asked, self.max_retry_after)
            except httpx.TransportError as exc:
                problem = f"{type(exc).__name__}: {exc}"
            if attempt < self.max_retries:
                time.sleep(wait)
        raise FetchFailed(f"{redact_url(url)}: {problem}, after {self.max_retries + 1} attempt(s)")

    def _fetched(
        self, url: str, response: httpx.Response, area: DownloadArea | None, limit: int
    ) -> Fetched:
        if response.status_code != 200 or area is None:
            return Fetched(url, response.status_code, response.headers)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            return Fetched(url, 200, response.headers, too_large=True)
        body = area.store(response.iter_bytes(), limit)
        return Fetched(url, 200, response.headers, body, too_large=body is None)

    def _wait_turn(self) -> None:
        with self._lock:
            now = time.monotonic()
            slot = max(now, self._next_slot)
            self._next_slot = slot + self.interval
            self.requests += 1
        if slot > now:
            time.sleep(slot - now)

    def _check_address(self, url: str) -> None:
        """Refuse a host that resolves to a private, loopback, link-local or otherwise
        non-public address, unless it is allowed private by name (SSRF)."""
        host = host_of(url)
        name = urlsplit(url).hostname or ""
        if name in self.private_hosts or host in self._checked:
            return
        try:
            addresses = {str(info[4][0]) for info in socket.getaddrinfo(name, None)}
        except OSError as exc:
            raise FetchFailed(f"{host}: the name does not resolve ({exc})") from None
        for address in sorted(addresses):
            ip = ipaddress.ip_address(address.partition("%")[0])
            if not ip.is_global:
                raise Refused(
                    f"{name} resolves to {ip}, not a public address; name the host in "
                    "`allow_private_hosts` to crawl it"
                )
        self._checked.add(host)
