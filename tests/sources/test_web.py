"""A website source against a real HTTP server on loopback, through the command line:
what a run asks for is counted at the server.

Qdrant's local mode and the hashing model; the site's pages change between runs as a
documentation site's do.
"""

from __future__ import annotations

import json
import logging
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ragflow_config.sources import SourceListingError, SourceSpec, document_id
from ragflow_config.sources.web import WebSource

from ._runs import changes, counts, run, write_pipeline
from ._web_server import Site, served

CRAWL = """\
      - type: web
        parameters:
          url: {base}/
          allow_private_hosts: [127.0.0.1]
          requests_per_second: 100
          max_retries: 1
          timeout_seconds: 5
"""
SITEMAP = """\
      - type: web
        parameters:
          sitemap: {base}/sitemap.xml
          allow_private_hosts: [127.0.0.1]
          requests_per_second: 100
          max_retries: 1
          timeout_seconds: 5
"""


@pytest.fixture
def downloads(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder the sources' temporary download areas are made in, for this test."""
    folder = tmp_path / "downloads"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def page(title: str, text: str, links: str = "") -> str:
    return f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{text}</p>{links}</body></html>"


@pytest.fixture
def web() -> Iterator[Site]:
    site = Site()
    for server in served(site):
        elsewhere = f"http://localhost:{server.port}"
        site.pages = {
            "/": page(
                "Fruit handbook",
                "What the team knows about fruit.",
                '<a href="/apples.html">Apples</a> <a href="pears.html#ripe">Pears</a> '
                '<a href="/private/keys.html">Keys</a> <a href="/moved.html">Moved</a> '
                f'<a href="{elsewhere}/elsewhere.html">Elsewhere</a>',
            ),
            "/apples.html": page("Apples", "Apples are red or green.", '<a href="/">Home</a>'),
            "/pears.html": page("Pears", "Pears ripen off the tree.", '<a href="/figs.html">F</a>'),
            "/figs.html": page("Figs", "Figs grow in warm places."),
            "/private/keys.html": page("Keys", "Not for crawlers."),
            # In the sitemap, linked from no page.
            "/dates.html": page("Dates", "Dates are sweet."),
            "/limes.html": page("Limes", "Limes are sour."),
        }
        site.redirects = {"/moved.html": f"{elsewhere}/apples.html?token=s3cr3t-value"}
        site.in_sitemap = [*site.pages]
        site.lastmod = {path: "2026-12-01" for path in ("/", "/apples.html", "/figs.html")}
        yield site


def test_a_crawl_stays_on_its_host_and_an_unchanged_run_downloads_nothing(
    tmp_path: Path,
    downloads: Path,
    web: Site,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = write_pipeline(tmp_path, CRAWL.format(base=web.base))
    with caplog.at_level(logging.WARNING, logger="ragflow_config.pipeline"):
        first = run(path, capsys)
    assert first["exit"] == 0, first
    assert changes(first) == {
        "/": "add",
        "/apples.html": "add",
        "/pears.html": "add",
        "/figs.html": "add",
    }
    [kb] = first["knowledge_bases"]
    ids = {change["path"]: change["document_id"] for change in kb["changes"]}
    # The identity is the page's URL.
    assert ids["/pears.html"] == document_id("docs", web.base, "/pears.html")
    # robots.txt's Disallow, the other host (a link, a redirect) are never asked for.
    assert not web.requested("/private/keys.html")
    assert not any(host.startswith("localhost") for host, _, _ in web.seen)
    assert web.count(path="/apples.html") == 1
    assert list(downloads.iterdir()) == []  # the pages' temporary folder is gone
    refused = [r.getMessage() for r in caplog.records if "another host" in r.getMessage()]
    assert refused and "s3cr3t-value" not in " ".join(refused), refused  # the URL redacted

    web.clear()
    assert counts(run(path, capsys)) == {"unchanged": 4}
    assert counts(run(path, capsys, "plan")) == {"unchanged": 4}
    assert web.count(status=200) == 0  # every page answered 304: nothing downloaded
    assert web.count(status=304) == 8

    web.pages["/apples.html"] = page("Apples", "Apples are red, green, or yellow.")
    web.clear()
    third = run(path, capsys)
    assert changes(third) == {"/apples.html": "update"}
    assert web.count(status=200) == 1


def test_a_sitemap_spares_the_requests_of_pages_dated_as_before_and_prunes_what_it_drops(
    tmp_path: Path, web: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_pipeline(tmp_path, SITEMAP.format(base=web.base))
    first = run(path, capsys)
    assert counts(first) == {"add": 6}, first
    assert not web.requested("/private/keys.html")  # listed, but robots.txt disallows it

    web.clear()
    assert counts(run(path, capsys)) == {"unchanged": 6}
    # The dated pages are not asked for at all; the undated one is asked conditionally.
    assert web.count() == 3 and web.count(status=304) == 3
    assert not web.requested("/apples.html") and not web.requested("/figs.html")

    web.pages["/figs.html"] = page("Figs", "Figs grow in warm places, and dry well.")
    web.lastmod["/figs.html"] = "2026-12-07"
    web.in_sitemap.remove("/apples.html")
    web.clear()
    planned = run(path, capsys, "plan")
    assert changes(planned) == {"/figs.html": "update", "/apples.html": "delete"}
    third = run(path, capsys)
    assert changes(third) == {"/figs.html": "update", "/apples.html": "delete"}
    assert web.count(status=200, path="/figs.html") == 2  # the plan's fetch, then the run's
    assert counts(run(path, capsys)) == {"unchanged": 5}


def test_a_crawl_that_fails_halfway_deletes_nothing(
    tmp_path: Path, downloads: Path, web: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_pipeline(tmp_path, CRAWL.format(base=web.base))
    assert counts(run(path, capsys)) == {"add": 4}
    # Pears breaks for good, and figs (reached only through pears) cannot be listed.
    web.failing["/pears.html"] = 503
    del web.pages["/apples.html"]
    failed = run(path, capsys)
    assert failed["exit"] == 1
    message = failed["error"]["message"]
    assert f"source {web.base}: the crawl failed" in message
    assert "/pears.html: HTTP 503, after 2 attempt(s)" in message
    assert "nothing is pruned" in message
    assert list(downloads.iterdir()) == []  # what it had downloaded is gone too

    del web.failing["/pears.html"]
    # Apples is gone from the site; only now, with a complete crawl, is it deleted (one of
    # four documents: past the 20 % guard, hence --force).
    assert changes(run(path, capsys, "run", "--force")) == {"/apples.html": "delete"}


def test_a_429_is_retried_after_the_wait_the_server_asks(
    tmp_path: Path, web: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    web.throttled["/figs.html"] = 1
    path = write_pipeline(tmp_path, CRAWL.format(base=web.base))
    assert counts(run(path, capsys)) == {"add": 4}
    assert [s for _, p, s in web.seen if p == "/figs.html"] == [429, 200]


def test_a_private_address_is_refused_unless_its_host_is_allowed_by_name(
    tmp_path: Path, web: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    source = CRAWL.format(base=web.base).replace("allow_private_hosts: [127.0.0.1]", "{}")
    path = write_pipeline(tmp_path, source.replace("          {}\n", ""))
    refused = run(path, capsys)
    assert refused["exit"] == 1
    assert "127.0.0.1 resolves to 127.0.0.1, not a public address" in refused["error"]["message"]
    assert "allow_private_hosts" in refused["error"]["message"]
    assert web.seen == []


def test_a_web_block_is_checked_at_its_lines(tmp_path: Path) -> None:
    from ragflow_config.pipeline._validate import check_file

    def issues(url: str, sitemap: str) -> list[str]:
        source = CRAWL.format(base=url).replace(
            "          max_retries: 1\n",
            f"          max_retries: 1\n          sitemap: {sitemap}\n",
        )
        return [str(issue) for issue in check_file(write_pipeline(tmp_path, source))[1]]

    wrong = issues("file:///etc", "x")
    assert any(":11:16: " in m and "url: 'file:///etc/' does not match" in m for m in wrong)
    assert any(":15:20: " in m and "sitemap: 'x' does not match" in m for m in wrong)
    [both] = issues("https://docs.example.com", "https://docs.example.com/sitemap.xml")
    assert ":11:11: " in both and "give `url` (a page to crawl from) or `sitemap`" in both


def test_a_site_past_max_pages_stops_the_source_and_prunes_nothing(
    tmp_path: Path, web: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write_pipeline(tmp_path, CRAWL.format(base=web.base))
    assert counts(run(path, capsys)) == {"add": 4}
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("max_retries: 1", "max_retries: 1\n          max_pages: 3"))
    cut = run(path, capsys)
    assert cut["exit"] == 1
    assert "the crawl failed (more than max_pages (3) pages; raise it)" in cut["error"]["message"]
    path.write_text(text)
    assert counts(run(path, capsys)) == {"unchanged": 4}  # nothing was deleted


def test_a_signed_link_is_fetched_as_it_is_and_named_without_its_secret(
    tmp_path: Path, web: Site, capsys: pytest.CaptureFixture[str]
) -> None:
    web.pages = {
        "/": page("Reports", "The reports.", '<a href="/report.html?sig=s3cr3t-value&v=2">R</a>'),
        "/report.html?sig=s3cr3t-value&v=2": page("Report", "Sales rose."),
    }
    path = write_pipeline(tmp_path, CRAWL.format(base=web.base))
    capsys.readouterr()
    document = run(path, capsys)
    assert changes(document) == {"/": "add", "/report.html?sig=***&v=2": "add"}
    assert "s3cr3t" not in json.dumps(document)
    assert web.count(status=200, path="/report.html?sig=s3cr3t-value&v=2") == 1


def test_a_sample_stops_at_its_bound_and_keeps_no_cache(tmp_path: Path, web: Site) -> None:
    """What `init` looks at: a crawl stopped after `limit` pages, not failed, and not kept
    as what a complete crawl saw."""
    parameters = {"url": f"{web.base}/", "allow_private_hosts": ["127.0.0.1"]}
    spec = SourceSpec(type="web", parameters=parameters)
    kind = WebSource(parameters=WebSource.Parameters.model_validate(parameters))
    # Breadth first: the start page, then its links in URL order.
    assert [page.relative for page in kind.sample(spec, tmp_path, 2)] == ["/", "/apples.html"]
    assert web.count() == 2 and not (tmp_path / ".cache").exists()
    with pytest.raises(SourceListingError, match=r"more than max_pages \(2\) pages"):
        list(
            WebSource(parameters=kind.parameters.model_copy(update={"max_pages": 2})).files(
                spec, tmp_path
            )
        )
