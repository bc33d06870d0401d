"""The guards in front of every route (Host and Origin, the bearer token, the body limit,
JSON errors, the access log, admission), through the real application in this process.

``tests/server``'s other files reach the same guards through a `serve` child process,
which mutation testing cannot see (``bench/mutation.md``); here ``create_app`` serves
the two-tenant pipeline through httpx's ASGI transport, so each request crosses every
middleware as a client's does. Its corpus is not indexed: the guards answer
before any search, and a search of a knowledge base not indexed yet is a 200 with no
hits, which is all a request let through needs to show (and mutation runs start one
test process per mutant, where indexing would cost more than the tests).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from pydantic import SecretStr

from ragflow_config.pipeline import Pipeline
from ragflow_config.server import ServeOptions, create_app
from ragflow_config.server._auth import UI_COOKIE, ui_session
from ragflow_config.server._guards import host_name, parsed_json
from ragflow_config.server._service import KnowledgeService

from ._serving import TOKEN, write_pipeline

SEARCH = "/v1/knowledge-bases/howto/search"
QUERY = {"query": "logging handler", "top_k": 2}
JSON = {"Content-Type": "application/json"}
BEARER = {"Authorization": f"Bearer {TOKEN}"}
ORIGIN = "https://app.example.com"
ACCESS_LOGGER = "ragflow_config.server.access"


@pytest.fixture(scope="module")
def pipeline_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The two-tenant pipeline, its corpus not indexed (the guards never read it)."""
    return write_pipeline(tmp_path_factory.mktemp("guards"))


@contextlib.asynccontextmanager
async def served(
    pipeline: Path, *, base_url: str = "http://127.0.0.1:8765", **options: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """A client of ``create_app(pipeline, ServeOptions(**options))``, from 127.0.0.1."""
    async with KnowledgeService(Pipeline.load(pipeline), None) as service:
        app = create_app(service, ServeOptions(**options))
        transport = httpx.ASGITransport(app=app, client=("127.0.0.1", 50000))
        async with httpx.AsyncClient(transport=transport, base_url=base_url) as client:
            yield client


def message(answer: httpx.Response) -> str:
    assert answer.headers["content-type"] == "application/json", answer.text
    text: str = answer.json()["error"]["message"]
    return text


# -- the bearer token ----------------------------------------------------------------


async def test_a_request_without_the_token_is_told_how_to_send_it(pipeline_file: Path) -> None:
    async with served(pipeline_file, token=SecretStr(TOKEN)) as client:
        answer = await client.post(SEARCH, json=QUERY)
    assert answer.status_code == 401
    assert message(answer) == "missing bearer token: send 'Authorization: Bearer <token>'"
    assert answer.headers["www-authenticate"] == 'Bearer realm="ragflow-config"'


@pytest.mark.parametrize(
    "authorization",
    [
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        f"Basic {TOKEN}",
        f"Bearer{TOKEN}",
        TOKEN,
        "Bearer ",
    ],
)
async def test_a_wrong_token_or_scheme_is_refused_without_echoing_it(
    pipeline_file: Path, authorization: str
) -> None:
    async with served(pipeline_file, token=SecretStr(TOKEN)) as client:
        answer = await client.post(SEARCH, json=QUERY, headers={"Authorization": authorization})
    assert answer.status_code == 401
    assert message(answer) == "invalid bearer token"
    assert TOKEN[:8] not in answer.text


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER"])
async def test_the_token_is_accepted_under_any_case_of_its_scheme(
    pipeline_file: Path, scheme: str
) -> None:
    async with served(pipeline_file, token=SecretStr(TOKEN)) as client:
        answer = await client.post(
            SEARCH, json=QUERY, headers={"Authorization": f"{scheme} {TOKEN} "}
        )
    assert answer.status_code == 200, answer.text
    assert answer.json()["hits"] == []


async def test_only_the_first_authorization_header_counts(pipeline_file: Path) -> None:
    async with served(pipeline_file, token=SecretStr(TOKEN)) as client:
        answer = await client.post(
            SEARCH,
            json=QUERY,
            headers=[("Authorization", "Bearer wrong"), ("Authorization", f"Bearer {TOKEN}")],
        )
    assert answer.status_code == 401


async def test_the_page_takes_its_session_cookie_and_sends_a_browser_to_sign_in(
    pipeline_file: Path,
) -> None:
    session = ui_session(TOKEN)
    async with served(pipeline_file, token=SecretStr(TOKEN), ui=True) as client:
        # Without a cookie: a browser's GET goes to the form, anything else is refused.
        for path in ("/ui", "/ui/"):
            to_form = await client.get(path)
            assert (to_form.status_code, to_form.headers["location"]) == (303, "/ui/login")
            assert to_form.content == b""
        assert (await client.head("/ui")).status_code == 303
        refused = await client.post("/ui/search", data={"query": "logging"})
        assert refused.status_code == 401
        assert message(refused).startswith("missing bearer token")
        # The form and its files are open; the cookie opens the rest of the page.
        assert (await client.get("/ui/login")).status_code == 200
        assert (await client.get("/ui/static/ui.css")).status_code == 200
        cookies = {"Cookie": f"other=1; {UI_COOKIE}={session}"}
        assert (await client.get("/ui/", headers=cookies)).status_code == 200
        assert (await client.get("/ui", headers=cookies)).status_code == 404  # past the guard
        # A cookie for another token, or none of the page's, is no session.
        stale = {"Cookie": f"{UI_COOKIE}={ui_session(TOKEN + 'old')}"}
        assert (await client.get("/ui/", headers=stale)).status_code == 303
        unrelated = {"Cookie": f"x{UI_COOKIE}={session}"}
        assert (await client.get("/ui/", headers=unrelated)).status_code == 303
        # Only the whole digest: a part of it, or more, is no session either.
        for forged in (session[:8], session[:-1], session + "0", ""):
            cookie = {"Cookie": f"{UI_COOKIE}={forged}"}
            assert (await client.get("/ui/", headers=cookie)).status_code == 303, forged
        # The cookie is the page's only: the API and look-alike paths still want the token.
        api = await client.post(SEARCH, json=QUERY, headers=cookies)
        assert api.status_code == 401
        look_alike = await client.get("/uix", headers=cookies)
        assert look_alike.status_code == 401


async def test_without_the_page_its_cookie_opens_nothing(pipeline_file: Path) -> None:
    async with served(pipeline_file, token=SecretStr(TOKEN)) as client:
        answer = await client.get("/ui", headers={"Cookie": f"{UI_COOKIE}={ui_session(TOKEN)}"})
    assert answer.status_code == 401


def test_the_session_cookie_is_a_digest_of_the_token_not_the_token() -> None:
    session = ui_session(TOKEN)
    assert TOKEN not in session and len(session) == 64
    assert session == ui_session(TOKEN) != ui_session(TOKEN + "x")


# -- Host and Origin ------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1:8765",
        "LOCALHOST:8765",
        "localhost.",
        "[::1]:8765",
        "10.1.2.3",
        "docs.internal:80",
    ],
)
async def test_the_server_s_names_and_any_address_are_allowed_hosts(
    pipeline_file: Path, host: str
) -> None:
    async with served(pipeline_file, allowed_hosts=("docs.internal",)) as client:
        answer = await client.get("/v1/knowledge-bases", headers={"Host": host})
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:8765", "localhost.evil"])
async def test_another_host_name_is_refused_naming_it_and_the_option(
    pipeline_file: Path, host: str
) -> None:
    async with served(pipeline_file) as client:
        answer = await client.get("/v1/knowledge-bases", headers={"Host": host})
    assert answer.status_code == 403
    assert message(answer) == (
        f"Host {host!r} is not a name of this server; start it with --allowed-host to allow it"
    )


async def test_a_request_without_a_host_is_refused(pipeline_file: Path) -> None:
    async with served(pipeline_file) as client:
        answer = await client.get("/v1/knowledge-bases", headers={"Host": ""})
    assert answer.status_code == 403
    assert message(answer) == "the request names no Host"


@pytest.mark.parametrize(
    "origin",
    [ORIGIN, ORIGIN + "/", ORIGIN.upper(), "http://127.0.0.1:8765", "https://127.0.0.1:8765"],
)
async def test_a_named_origin_or_the_server_s_own_page_may_call(
    pipeline_file: Path, origin: str
) -> None:
    async with served(pipeline_file, cors_origins=(ORIGIN + "/",)) as client:
        answer = await client.get("/v1/knowledge-bases", headers={"Origin": origin})
    assert answer.status_code == 200, answer.text


@pytest.mark.parametrize(
    "origin",
    ["https://evil.example", "null", "ftp://127.0.0.1:8765", "http://127.0.0.1:8766"],
)
async def test_another_origin_is_refused_naming_it_and_the_option(
    pipeline_file: Path, origin: str
) -> None:
    async with served(pipeline_file, cors_origins=(ORIGIN,)) as client:
        answer = await client.get("/v1/knowledge-bases", headers={"Origin": origin})
    assert answer.status_code == 403
    assert message(answer) == (
        f"Origin {origin!r} is not allowed; start the server with --cors-origin"
    )


async def test_a_refused_host_is_checked_before_the_token_and_a_long_one_is_cut(
    pipeline_file: Path,
) -> None:
    host = "a" * 300 + ".example"
    async with served(pipeline_file, token=SecretStr(TOKEN)) as client:
        answer = await client.get("/v1/knowledge-bases", headers={"Host": host})
    assert answer.status_code == 403
    assert f"{host[:200]}... ({len(host)} characters)" in message(answer)


def test_host_names_are_read_without_port_case_or_final_dot() -> None:
    assert host_name(" Example.COM:8080 ") == "example.com"
    assert host_name("[::1]:8765") == "::1"
    assert host_name("[fe80::1]") == "fe80::1"
    assert host_name("::1") == "::1"  # an address with colons has no port to drop
    assert host_name("example.com:http") == "example.com:http"
    assert host_name("example.com.") == "example.com"
    assert host_name(":8765") == ":8765"


# -- the body limit and JSON errors ------------------------------------------------


def _body_of(size: int) -> bytes:
    """A search of ``size`` bytes (its query padded with spaces)."""
    padding = size - len(json.dumps({**QUERY, "query": "logging"}).encode())
    body = json.dumps({**QUERY, "query": "logging" + " " * padding}).encode()
    assert len(body) == size
    return body


async def test_a_body_over_the_limit_is_413_by_its_length_or_as_it_streams(
    pipeline_file: Path,
) -> None:
    limit = 1024
    body = _body_of(limit + 1)
    async with served(pipeline_file, max_body_bytes=limit) as client:
        declared = await client.post(SEARCH, content=body, headers=JSON)

        async def streamed() -> AsyncIterator[bytes]:
            for start in range(0, len(body), 100):
                yield body[start : start + 100]

        undeclared = await client.post(SEARCH, content=streamed(), headers=JSON)
    for answer in (declared, undeclared):
        assert answer.status_code == 413
        assert message(answer) == f"the request body is larger than {limit} bytes"


async def test_a_body_of_exactly_the_limit_is_read(pipeline_file: Path) -> None:
    limit = 1024
    body = _body_of(limit)
    async with served(pipeline_file, max_body_bytes=limit) as client:
        declared = await client.post(SEARCH, content=body, headers=JSON)

        async def streamed() -> AsyncIterator[bytes]:
            yield body[:600]
            yield body[600:]

        undeclared = await client.post(SEARCH, content=streamed(), headers=JSON)
    assert (declared.status_code, undeclared.status_code) == (200, 200), declared.text


async def test_an_unreadable_content_length_is_400(pipeline_file: Path) -> None:
    async with served(pipeline_file) as client:
        answer = await client.post(SEARCH, content=b"{}", headers={"Content-Length": "twelve"})
    assert answer.status_code == 400
    assert message(answer) == "invalid Content-Length"


async def test_a_framework_s_plain_text_error_reaches_the_client_as_json(
    pipeline_file: Path,
) -> None:
    # Starlette's CORS middleware refuses a preflight from an unknown origin in plain text;
    # the Origin check lets it through as the server's own page.
    async with served(pipeline_file, cors_origins=(ORIGIN,)) as client:
        answer = await client.options(
            SEARCH,
            headers={
                "Origin": ORIGIN,
                "Access-Control-Request-Method": "POST",
                "Access-Control-Request-Headers": "X-Not-Allowed",
            },
        )
    assert answer.status_code == 400
    assert message(answer) == "Disallowed CORS headers"
    assert answer.headers["content-length"] == str(len(answer.content))
    assert answer.headers["access-control-allow-origin"] == ORIGIN


async def test_a_json_error_keeps_its_own_body(pipeline_file: Path) -> None:
    async with served(pipeline_file) as client:
        answer = await client.post("/v1/knowledge-bases/nope/search", json=QUERY)
    assert answer.status_code == 404
    assert "nope" in message(answer)


def test_json_is_parsed_to_any_size_of_integer_and_bounded_in_depth() -> None:
    assert parsed_json(b'{"n": 1' + b"0" * 400 + b"}") == {"n": 10**400}
    with pytest.raises(ValueError, match="recursion limit"):
        parsed_json("[" * 300 + "]" * 300)


# -- the access log -------------------------------------------------------------------


async def test_each_request_is_one_access_line_without_its_query_unless_asked(
    pipeline_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    for log_queries in (False, True):
        caplog.clear()
        async with served(pipeline_file, log_queries=log_queries) as client:
            await client.post(SEARCH + "?secret=1", json=QUERY)
            await client.get("/v1/knowledge-bases", headers={"Host": "attacker.example"})
        lines = [r.getMessage() for r in caplog.records if r.name == ACCESS_LOGGER]
        assert len(lines) == 2
        searched, refused = lines
        assert searched.startswith(f'127.0.0.1 "POST {SEARCH}" 200 ')
        assert refused.startswith('127.0.0.1 "GET /v1/knowledge-bases" 403 ')
        assert "secret" not in searched
        assert searched.endswith(' query="logging handler"') == log_queries
        assert "query=" not in refused


async def test_the_access_log_can_be_turned_off(
    pipeline_file: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger=ACCESS_LOGGER)
    async with served(pipeline_file, access_log=False) as client:
        assert (await client.get("/healthz")).status_code == 200
    assert not [r for r in caplog.records if r.name == ACCESS_LOGGER]


# -- admission ------------------------------------------------------------------------


async def test_a_client_past_its_share_gets_429_with_retry_after(pipeline_file: Path) -> None:
    async with served(pipeline_file, max_searches_per_client=1) as client:
        app = client._transport.app  # type: ignore[attr-defined]
        await app.state.admission.enter("127.0.0.1")  # one search of this client in flight
        refused = await client.post(SEARCH, json=QUERY)
        # Routes that do no store work are never queued.
        health = await client.get("/healthz")
        names = await client.get("/v1/knowledge-bases")
        app.state.admission.leave("127.0.0.1")
        admitted = await client.post(SEARCH, json=QUERY)
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    assert message(refused) == (
        "this client has 1 requests in flight already; wait for one to finish"
    )
    assert (health.status_code, names.status_code, admitted.status_code) == (200, 200, 200)
    assert app.state.admission.running == 0


# -- the lifespan -------------------------------------------------------------------


async def test_the_lifespan_crosses_every_guard_to_the_application(pipeline_file: Path) -> None:
    """A server starts the application with a ``lifespan`` scope, which is not HTTP: each
    guard hands it on untouched, or the server never starts."""
    async with KnowledgeService(Pipeline.load(pipeline_file), None) as service:
        app = create_app(service, ServeOptions(token=SecretStr(TOKEN), ui=True))
        asked = [{"type": "lifespan.startup"}, {"type": "lifespan.shutdown"}]
        answered: list[str] = []

        async def receive() -> dict[str, str]:
            return asked.pop(0)

        async def send(event: dict[str, Any]) -> None:
            answered.append(event["type"])

        scope = {"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}}
        with contextlib.suppress(Exception):  # a broken hand-on fails below, by what it sent
            await app(scope, receive, send)
    assert answered == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
