"""The retrieval-testing page (`serve --ui`) through a real server, as a browser without
JavaScript meets it: plain GET forms and links, the sign-in cookie, the guards."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import httpx
import pytest

from ._serving import ServerProcess
from ._ui_sample import TOKEN, sample

STATIC = Path(__file__).resolve().parents[2] / "ragflow_config" / "server" / "ui" / "static"


@pytest.fixture
async def indexed(tmp_path: Path) -> Path:
    return await sample(tmp_path)


def signed_in(client: httpx.Client) -> None:
    answer = client.post("/ui/login", data={"token": TOKEN})
    assert answer.status_code == 303 and answer.headers["location"] == "/ui/"


def test_the_page_is_opt_in(indexed: Path, server_process: type[ServerProcess]) -> None:
    server = server_process(str(indexed))
    with httpx.Client(base_url=server.url) as client:
        assert client.get("/ui/").status_code == 404


def test_the_token_is_taken_once_and_kept_in_a_cookie_for_the_page_only(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--ui", env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    with httpx.Client(base_url=server.url) as client:
        first = client.get("/ui/kb/pets?q=cats")
        assert first.status_code == 303 and first.headers["location"] == "/ui/login"
        assert client.post("/ui/kb/pets").status_code == 401  # not a page view: no redirect
        form = client.get("/ui/login")
        assert form.status_code == 200 and 'type="password" name="token"' in form.text
        wrong = client.post("/ui/login", data={"token": TOKEN + "x"})
        assert wrong.status_code == 401 and "wrong token" in wrong.text
        assert "ragflow_ui" not in client.cookies
        answer = client.post("/ui/login", data={"token": TOKEN})
        cookie = answer.headers["set-cookie"]
        assert re.search(r"HttpOnly", cookie) and "SameSite=strict" in cookie
        assert "Path=/ui" in cookie and TOKEN not in cookie  # a digest, not the token
        assert client.get("/ui/kb/pets?q=cats").status_code == 200
        # The cookie opens the page only: the API and MCP still want the bearer token.
        assert client.get("/v1/knowledge-bases").status_code == 401
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        assert client.get("/v1/knowledge-bases", headers=bearer).status_code == 200
        assert client.post("/ui/logout").status_code == 303
        assert client.get("/ui/").status_code == 303  # signed out


def test_a_plain_get_search_shows_hits_with_their_explain_and_marks_matched_words(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--ui", env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    with httpx.Client(base_url=server.url) as client:
        signed_in(client)
        home = client.get("/ui/")
        assert home.status_code == 200
        assert 'class="documents-count">3<' in home.text and "fingerprint" in home.text
        assert re.search(r'<form method="get" action="/ui/kb/pets"', home.text)
        page = client.get("/ui/kb/pets", params={"q": "sleeping cats", "top_k": 3})
        assert page.status_code == 200
        assert page.headers["content-security-policy"].startswith("default-src 'none'")
        hits = re.findall(r'<li class="hit">.*?</li>', page.text, re.DOTALL)
        assert len(hits) == 3
        first = hits[0]
        assert "cats.md" in first and re.search(r'<tr class="dense"><th>dense</th><td>#\d', first)
        assert re.search(r'<tr class="lexical"><th>lexical</th><td>#1</td>', first)
        assert re.search(r'<span class="term"[^>]*>sleep [\d.]+</span>', first)
        assert '<tr class="fusion"><th>weighted</th>' in first
        assert '<code>{"shelf": "a"}</code>' in first  # the filter in force
        # "sleep" and "sleeping" both analyse to the matched term "sleep".
        assert "<mark>sleep</mark>" in first and "<mark>sleeping</mark>" in first
        assert "<mark>Cats</mark>" in first
        # The mode toggle: the same query, dense only.
        dense = client.get("/ui/kb/pets", params={"q": "sleeping cats", "mode": "dense"})
        assert '<tr class="lexical">' not in dense.text and '<tr class="dense">' in dense.text
        # htmx asks for the results alone.
        fragment = client.get(
            "/ui/kb/pets", params={"q": "sleeping cats"}, headers={"HX-Request": "true"}
        )
        assert fragment.text.lstrip().startswith('<p class="summary">')
        bad = client.get("/ui/kb/pets", params={"q": "cats", "top_k": "500"})
        assert "top_k must be from 1 to 50" in bad.text
        assert client.get("/ui/kb/nope").status_code == 404


def test_the_document_browser_lists_documents_and_one_documents_chunks_in_order(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--ui")  # no token: the page is open
    # The announcement names the page's address (issue 52), not only the API's.
    assert f"the retrieval-testing page at {server.url}/ui)" in server.log
    with httpx.Client(base_url=server.url) as client:
        listing = client.get("/ui/kb/pets/documents")
        assert listing.status_code == 200
        rows = re.findall(r'<tr class="document-row"><td><a href="([^"]+)"', listing.text)
        assert len(rows) == 3
        cats = next(link for link in rows if "cats.md" in listing.text.split(link, 1)[1][:400])
        page = client.get(cats)
        assert page.status_code == 200
        indexes = [
            int(i) for i in re.findall(r'<div class="chunk-head">chunk (\d+)</div>', page.text)
        ]
        assert len(indexes) > 1 and indexes == sorted(indexes) and indexes[0] == 0
        assert '"shelf": "a"' in page.text  # each chunk's metadata
        assert client.get("/ui/kb/pets/documents/nope").status_code == 404


async def test_a_collection_without_a_lexical_side_is_searched_dense_only(
    tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(await sample(tmp_path, mode="dense")), "--ui")
    with httpx.Client(base_url=server.url) as client:
        page = client.get("/ui/kb/pets")
        assert re.search(r'value="lexical" disabled', page.text)
        assert re.search(r'value="dense" checked', page.text)
        forced = client.get("/ui/kb/pets", params={"q": "cats", "mode": "lexical"})
        assert "built without a lexical side, which mode &#39;lexical&#39; needs" in forced.text
        assert '<li class="hit">' not in forced.text
        dense = client.get("/ui/kb/pets", params={"q": "cats"})
        assert dense.text.count('<li class="hit">') == 5


def test_the_page_is_behind_the_host_and_origin_checks(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--ui", env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    with httpx.Client(base_url=server.url) as client:
        rebinding = client.get("/ui/login", headers={"Host": "attacker.example:8765"})
        assert rebinding.status_code == 403
        other_site = client.post(
            "/ui/login", data={"token": TOKEN}, headers={"Origin": "https://attacker.example"}
        )
        assert other_site.status_code == 403 and "ragflow_ui" not in other_site.headers.get(
            "set-cookie", ""
        )


def test_htmx_is_served_from_the_package_as_released() -> None:
    digest = hashlib.sha256((STATIC / "htmx.min.js").read_bytes()).hexdigest()
    assert digest == "d6fdc75f204e6bdefa99b69bf1e6d4ac69b8a364f77929f45c13476b4000f717"  # 2.0.11
    assert "Zero-Clause BSD" in (STATIC / "htmx.LICENSE.txt").read_text(encoding="utf-8")


def test_the_page_s_files_are_package_data() -> None:
    """Each template and static file is named by pyproject's package-data, so a wheel has it."""
    import fnmatch
    import json

    pyproject = (STATIC.parents[3] / "pyproject.toml").read_text(encoding="utf-8")
    line = re.search(r'^\[tool\.setuptools\.package-data\]\n"\*" = (\[.*\])$', pyproject, re.M)
    assert line
    patterns = json.loads(line.group(1))
    files = [p for p in (STATIC.parent).rglob("*") if p.is_file() and "__pycache__" not in p.parts]
    assert len(files) >= 10
    for path in files:
        assert any(fnmatch.fnmatch(path.name, pattern) for pattern in patterns), path
