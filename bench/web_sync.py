"""What a website source downloads: a site of N pages, counted at the server.

    python bench/web_sync.py [--pages 300]

The small website of the tests (tests/sources/_web_server.py) on loopback, the
hashing model, Qdrant's local mode; the source at 100 requests a second, its
maximum. For a crawl from an index page linking every page, and for a sitemap
dating every page: the first run, `plan` and `run` of the unchanged site, one page
edited (and, in the sitemap, re-dated): `plan`, `run`, and `run` again. Prints a
Markdown table of each step's page answers (200s, 304s; robots.txt and the sitemap
aside), wall seconds and CPU seconds (of this whole process: the server runs in its
threads).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from sources._runs import write_pipeline  # noqa: E402
from sources._web_server import Site, WebServer  # noqa: E402

from ragflow_config.cli import main as cli  # noqa: E402

SOURCE = """\
      - type: web
        parameters: {{{start}: "{url}", allow_private_hosts: [127.0.0.1],
                     requests_per_second: 100, max_pages: 100000, max_depth: 1}}
"""


def step(path: Path, site: Site, command: str) -> tuple[int, int, float, float, str]:
    site.clear()
    options = ["--workers", "0"] if command == "run" else []
    wall, cpu = time.perf_counter(), time.process_time()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli([command, str(path), "--json", *options])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert code == 0, out.getvalue()[:500]
    [kb] = json.loads(out.getvalue())["knowledge_bases"]
    changed = {k: v for k, v in kb["counts"].items() if v and k != "unchanged"}
    summary = ", ".join(f"{k} {v:,}" for k, v in changed.items()) or "none"
    return site.count(status=200), site.count(status=304), wall, cpu, summary


def steps(site: Site, start: str, url: str) -> list[tuple[str, int, int, float, float, str]]:
    with tempfile.TemporaryDirectory() as folder:
        path = write_pipeline(Path(folder), SOURCE.format(start=start, url=url))
        rows = [("first run", *step(path, site, "run"))]
        rows += [(f"unchanged {c}", *step(path, site, c)) for c in ("plan", "run")]
        site.pages["/p00007.html"] = "<html><body><h1>Page 7</h1><p>Edited.</p></body></html>"
        site.lastmod["/p00007.html"] = "2026-12-08"
        rows += [(f"one edited, {c}", *step(path, site, c)) for c in ("plan", "run")]
        rows.append(("unchanged run after", *step(path, site, "run")))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=300)
    args = parser.parse_args()
    names = [f"/p{i:05d}.html" for i in range(args.pages)]
    tables = {}
    for start in ("url", "sitemap"):
        site = Site(robots="User-agent: *\nAllow: /\n")
        site.pages = {
            name: f"<html><body><h1>Page {i}</h1><p>Topic {i % 97}, item {i}.</p></body></html>"
            for i, name in enumerate(names)
        }
        links = "".join(f'<a href="{name}">{name}</a> ' for name in names)
        site.pages["/"] = f"<html><body><h1>Index</h1>{links}</body></html>"
        site.in_sitemap = names
        site.lastmod = dict.fromkeys(names, "2026-12-01")
        server = WebServer(site)
        try:
            url = f"{site.base}/" if start == "url" else f"{site.base}/sitemap.xml"
            tables[start] = steps(site, start, url)
        finally:
            server.stop()
    for start, rows in tables.items():
        what = "a crawl from an index page" if start == "url" else "a sitemap with lastmod"
        print(f"\n{args.pages:,} pages, {what}\n")
        print("| step | page 200s | page 304s | wall s | CPU s | changes |")
        print("|---|---:|---:|---:|---:|---|")
        for name, ok, unchanged, wall, cpu, summary in rows:
            print(f"| {name} | {ok:,} | {unchanged:,} | {wall:.2f} | {cpu:.2f} | {summary} |")


if __name__ == "__main__":
    main()
