"""The retrieval-testing page and the eval report in a real browser: Debian's chromium
driven by Playwright (never `playwright install`: .ci/run installs the system's chromium).

One server (`serve --ui` with a token) on a small hybrid knowledge base: sign in, search,
see the hits and their explain, open a document's chunks, with JavaScript and without; a
DNS-rebinding name (resolved to loopback by chromium's own resolver rules) is refused.
Each test leaves a screenshot in its temporary folder.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragflow_config.cli import main

from ._serving import ServerProcess
from ._ui_sample import TOKEN, sample

pytestmark = pytest.mark.browser

CHROMIUM = Path("/usr/bin/chromium")
REBINDING = "rebound.attacker.test"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # What DNS rebinding does: a name the attacker owns resolves to this machine.
    f"--host-resolver-rules=MAP {REBINDING} 127.0.0.1",
]
QUERIES = """\
queries:
  - {id: cats, query: sleeping cats purr, relevant: [cats.md]}
  - {id: dogs, query: garden dogs bark, relevant: [dogs.md]}
  - {id: tea, query: brewing green tea, relevant: [tea.md]}
"""


@pytest.fixture
def sync_api() -> Any:
    found = pytest.importorskip("playwright.sync_api", reason="pip install -e .[dev]")
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium: apt-get install chromium (.ci/run does)")
    return found


@contextlib.contextmanager
def browser(sync_api: Any, folder: Path, *, javascript: bool = True) -> Iterator[Any]:
    """Chromium with a fresh profile in ``folder``. Started inside the test, once its
    fixtures are set up: Playwright's synchronous API runs an event loop of its own."""
    profile = folder / f"profile-{'js' if javascript else 'nojs'}"
    with sync_api.sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile),
            executable_path=str(CHROMIUM),
            headless=True,
            args=ARGS,
            java_script_enabled=javascript,
            viewport={"width": 1100, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture
async def indexed(tmp_path: Path) -> Path:
    return await sample(tmp_path)


def test_search_explain_and_browse_with_the_token(
    sync_api: Any, indexed: Path, tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--ui", env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    with browser(sync_api, tmp_path) as context:
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)

        page.goto(f"{server.url}/ui/")
        assert page.url.endswith("/ui/login")  # no cookie yet: the sign-in form
        page.fill("input[name=token]", TOKEN)
        page.click("form.login button")
        page.wait_for_url(re.compile(r"/ui/$"))
        assert page.inner_text("dd.documents-count") == "3"
        assert "embedding" in page.inner_text("dd.fingerprint")

        # From the list: a plain form that opens the knowledge base's page with its hits.
        page.fill("section#kb-pets input[name=q]", "sleeping cats")
        page.press("section#kb-pets input[name=q]", "Enter")
        page.wait_for_selector("li.hit")
        # On that page htmx swaps new results in without loading a page.
        page.evaluate("window.notReloaded = true")
        page.fill("form.search input[name=q]", "garden dogs bark")
        page.check("input[name=mode][value=hybrid]")
        page.fill("input[name=top_k]", "2")
        page.click("form.search button")
        page.wait_for_selector("p.summary:has-text('garden dogs bark')")
        assert page.evaluate("window.notReloaded") is True
        assert re.search(r"q=garden(\+|%20)dogs", page.url)  # pushed: a reload shows the same
        hits = page.locator("li.hit")
        assert hits.count() == 2
        first = hits.nth(0)
        assert first.locator("b.source").inner_text() == "dogs.md"
        assert re.match(r"#\d+", first.locator("tr.dense td").first.inner_text())
        assert first.locator("tr.lexical td").first.inner_text() == "#1"
        terms = first.locator("span.term").all_inner_texts()
        assert {t.split()[0] for t in terms} >= {"garden", "dog", "bark"}
        marked = first.locator(".text mark").all_inner_texts()
        assert {"garden", "dogs", "bark"} <= set(marked)
        assert "weighted" in first.locator("tr.fusion").inner_text()
        assert '"shelf": "a"' in first.locator("tr.filter").inner_text()
        page.screenshot(path=str(tmp_path / "search.png"), full_page=True)

        # A hit's document: its chunks in order, with their metadata.
        first.locator("a.document").click()
        page.wait_for_selector("li.chunk")
        heads = page.locator("div.chunk-head").all_inner_texts()
        assert heads == [f"chunk {i}" for i in range(len(heads))] and heads
        assert page.inner_text("h2.document-title") == "dogs.md"

        # The document browser opens a document's chunks in place (htmx).
        page.goto(f"{server.url}/ui/kb/pets/documents")
        page.click("tr.document-row a:has-text('cats.md')")
        page.wait_for_selector("#chunks li.chunk")
        assert page.inner_text("#chunks h2.document-title") == "cats.md"
        assert page.locator("table.documents").count() == 1  # the list stays
        page.screenshot(path=str(tmp_path / "documents.png"), full_page=True)
        assert errors == []

        # The name an attacker rebound to this machine is refused, cookie or not.
        port = server.url.rsplit(":", 1)[1]
        refused = page.goto(f"http://{REBINDING}:{port}/ui/")
        assert refused is not None and refused.status == 403
        assert "is not a name of this server" in page.content()
    assert (tmp_path / "search.png").stat().st_size > 10_000


def test_the_basic_search_works_with_javascript_off(
    sync_api: Any, indexed: Path, tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--ui")
    with browser(sync_api, tmp_path, javascript=False) as context:
        page = context.new_page()
        page.goto(f"{server.url}/ui/kb/pets")
        page.fill("form.search input[name=q]", "green tea")
        page.check("input[name=mode][value=lexical]")
        page.click("form.search button")
        page.wait_for_selector("li.hit")
        assert "mode=lexical" in page.url
        assert page.locator("li.hit b.source").first.inner_text() == "tea.md"
        assert page.locator("li.hit tr.dense").count() == 0  # lexical only
        page.screenshot(path=str(tmp_path / "no-javascript.png"), full_page=True)


def test_the_eval_report_renders_its_charts(
    sync_api: Any, indexed: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (indexed.parent / "queries.yaml").write_text(QUERIES, encoding="utf-8")
    with indexed.open("a", encoding="utf-8") as file:
        file.write("    evaluation: {queries: queries.yaml, k: 2}\n")
    dense = indexed.parent / "dense.yaml"
    dense.write_text(indexed.read_text().replace("mode: hybrid", "mode: dense"))
    report = tmp_path / "report.html"
    assert main(["eval", str(dense), str(indexed), "--html", str(report)]) == 0
    capsys.readouterr()
    with browser(sync_api, tmp_path) as context:
        page = context.new_page()
        page.goto(report.as_uri())
        bars = page.locator("svg.per-query rect.bar")
        assert bars.count() == 3  # one bar per query
        for index in range(3):  # drawn: each has a place on the page
            box = bars.nth(index).bounding_box()
            assert box is not None and box["width"] > 0 and box["height"] > 0
        assert page.locator("svg.rank-positions rect.bar").count() == 2 * 2  # k ranks x 2 runs
        assert page.locator("details.worst-query div.why").count() > 0
        page.screenshot(path=str(tmp_path / "report.png"), full_page=True)
