"""A small website on loopback for the web source's tests: pages with ETags that answer
conditional GETs with 304, a robots.txt, a sitemap, redirects, and failures on demand.

It records every request it answers (method, path, status), so a test counts what
went over the wire. The same server answers as ``127.0.0.1`` and as ``localhost``:
to a crawl that starts at ``127.0.0.1``, ``localhost`` is another host.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from xml.sax.saxutils import escape


@dataclass
class Site:
    """What the server serves, changed by the tests between runs."""

    pages: dict[str, str] = field(default_factory=dict)  # path -> HTML
    lastmod: dict[str, str] = field(default_factory=dict)  # path -> sitemap date
    in_sitemap: list[str] = field(default_factory=list)
    robots: str = "User-agent: *\nDisallow: /private/\n"
    redirects: dict[str, str] = field(default_factory=dict)  # path -> Location
    failing: dict[str, int] = field(default_factory=dict)  # path -> status, every time
    throttled: dict[str, int] = field(default_factory=dict)  # path -> 429s left to answer
    seen: list[tuple[str, str, int]] = field(default_factory=list)  # (host, path, status)
    base: str = ""  # set by the server: http://127.0.0.1:PORT
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, status: int | None = None, path: str | None = None) -> int:
        """Requests to 127.0.0.1 answered (with ``status``, for ``path``), robots.txt and
        the sitemap aside."""
        return sum(
            1
            for host, p, s in self.seen
            if host.startswith("127.0.0.1")
            and p not in ("/robots.txt", "/sitemap.xml")
            and (status is None or s == status)
            and (path is None or p == path)
        )

    def requested(self, path: str, host: str = "127.0.0.1") -> bool:
        return any(h.startswith(host) and p == path for h, p, _ in self.seen)

    def clear(self) -> None:
        with self.lock:
            self.seen.clear()

    def sitemap(self) -> str:
        entries = "".join(
            f"<url><loc>{escape(self.base + path)}</loc>"
            + (f"<lastmod>{self.lastmod[path]}</lastmod>" if path in self.lastmod else "")
            + "</url>"
            for path in self.in_sitemap
        )
        return (
            '<?xml version="1.0" encoding="UTF-8"?>'
            f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>'
        )


class WebServer:
    """The site on 127.0.0.1, at ``base`` (``http://127.0.0.1:PORT``)."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(site))
        self.server.daemon_threads = True
        self.port = self.server.server_address[1]
        site.base = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def served(site: Site) -> Iterator[WebServer]:
    server = WebServer(site)
    try:
        yield server
    finally:
        server.stop()


def _handler(site: Site) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            path = self.path
            if path in site.failing:
                self._answer(site.failing[path], b"broken")
            elif site.throttled.get(path, 0) > 0:
                with site.lock:
                    site.throttled[path] -= 1
                self._answer(429, b"slow down", {"Retry-After": "1"})
            elif path in site.redirects:
                self._answer(302, b"", {"Location": site.redirects[path]})
            elif path == "/robots.txt":
                self._answer(200, site.robots.encode(), {"Content-Type": "text/plain"})
            elif path == "/sitemap.xml":
                self._answer(200, site.sitemap().encode(), {"Content-Type": "application/xml"})
            elif path in site.pages:
                body = site.pages[path].encode()
                etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
                if self.headers.get("If-None-Match") == etag:
                    self._answer(304, b"", {"ETag": etag})
                else:
                    headers = {"ETag": etag, "Content-Type": "text/html; charset=utf-8"}
                    self._answer(200, body, headers)
            else:
                self._answer(404, b"not found")

        def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            with site.lock:
                site.seen.append((self.headers.get("Host", ""), self.path, status))
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if status != 304:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if status != 304:
                self.wfile.write(body)

    return Handler
