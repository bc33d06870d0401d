"""The JSON API through a real uvicorn server (`ragflow-config serve`) on a free loopback port."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx

from ragflow_config.pipeline import Pipeline

from ._serving import TOKEN, ServerProcess, tool_call, write_pipeline

QUERY = "read a file line by line"
JSON = {"Content-Type": "application/json"}


async def _expected(file: Path, kb: str, query: str, **search: object) -> list[dict[str, object]]:
    """What the in-process KnowledgeBase.search answers (run before the server takes the store)."""
    async with Pipeline.load(file).build([kb]) as built:
        hits = await built.knowledge_base(kb).search([query], **search)  # type: ignore[arg-type]
        return [hit.model_dump(mode="json") for hit in hits]


async def test_search_answers_what_knowledge_base_search_does(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    expected = await _expected(indexed, "tutorial", QUERY, top_k=4)
    documents = await _documents(indexed, "tutorial")
    server = server_process(str(indexed))
    assert server.url.startswith("http://127.0.0.1:")  # loopback unless --host says otherwise
    with httpx.Client(base_url=server.url) as client:
        answer = client.post(
            "/v1/knowledge-bases/tutorial/search", json={"query": QUERY, "top_k": 4}
        )
        assert answer.status_code == 200, answer.text
        body = answer.json()
        assert body["knowledge_base"] == "tutorial"
        assert body["hits"] == expected  # score, document id, source and content, as search --json
        assert expected and {"score", "document_id", "chunk"} <= set(expected[0])
        assert expected[0]["chunk"]["source"] == "files.md"

        listing = client.get("/v1/knowledge-bases").json()
        assert [kb["name"] for kb in listing["knowledge_bases"]] == ["tutorial", "howto"]
        page = client.get("/v1/knowledge-bases/tutorial/documents", params={"limit": 2}).json()
        assert page["total"] == len(documents) == 3
        assert [d["source"] for d in page["documents"]] == sorted(documents)[:2]
        assert client.get("/healthz").json() == {"status": "ok"}
        assert client.get("/readyz").json() == {
            "status": "ready",
            "knowledge_bases": {"tutorial": "ready", "howto": "ready"},
        }
    assert server.stop() == 0


async def _documents(file: Path, kb: str) -> list[str]:
    async with Pipeline.load(file).build([kb]) as built:
        return [d.source for d in await built.knowledge_base(kb).list_documents()]


async def test_a_client_filter_cannot_reach_another_tenants_chunks(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed))
    secret = {"query": "zanzibar logging handler", "top_k": 10}
    attempts = [
        {},
        {"tenant_id": "howto"},
        {"tenant_id": {"$ne": "tutorial"}},
        {"tenant_id": "howto", "ragflow": {"path": "logging.md"}},
    ]
    with httpx.Client(base_url=server.url) as client:
        own = client.post("/v1/knowledge-bases/howto/search", json=secret).json()["hits"]
        assert own and own[0]["chunk"]["source"] == "logging.md"  # the chunks exist
        for where in attempts:
            answer = client.post(
                "/v1/knowledge-bases/tutorial/search", json={**secret, "filter": where or None}
            )
            assert answer.status_code == 200, answer.text
            hits = answer.json()["hits"]
            assert all(hit["chunk"]["metadata"]["tenant_id"] == "tutorial" for hit in hits)
            assert not [hit for hit in hits if "zanzibar" in hit["chunk"]["content"]["text"]]
        listing = client.get("/v1/knowledge-bases/tutorial/documents").json()["documents"]
        assert sorted(d["source"] for d in listing) == ["files.md", "lists.md", "loops.md"]


async def test_bad_requests_get_a_4xx_with_a_message_never_a_traceback(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--max-query-chars", "100", "--max-body-bytes", "2048")
    search = "/v1/knowledge-bases/tutorial/search"
    cases: list[tuple[str, str, dict[str, object], int, str]] = [
        ("POST", search, {"content": b"{not json", "headers": JSON}, 400, "not valid JSON"),
        ("POST", search, {"content": b"", "headers": JSON}, 400, "needs a JSON body"),
        ("POST", search, {"content": b'{"query": "x"}'}, 415, "Content-Type: application/json"),
        (
            "POST",
            search,
            {"content": b'{"query": "x"}', "headers": {"Content-Type": "text/plain"}},
            415,
            "must be JSON",
        ),
        ("POST", search, {"json": {"query": "   "}}, 400, "query: query is empty"),
        # Blank to Python but not to JSON Schema's \s, or the other way: blank to both now
        # (long Schemathesis runs found U+001C, then U+0085, answered 400 against the schema).
        ("POST", search, {"json": {"query": "\u001c"}}, 400, "query: query is empty"),
        ("POST", search, {"json": {"query": "\u0085"}}, 400, "query: query is empty"),
        ("POST", search, {"json": {"query": "\ufeff "}}, 400, "query: query is empty"),
        ("POST", search, {"json": {"query": "x", "score_threshold": "0"}}, 400, "score_threshold"),
        ("POST", search, {"json": {"query": "x", "top_k": "3"}}, 400, "top_k: Input should be"),
        ("POST", search, {"json": {"query": "x", "top_k": True}}, 400, "top_k: Input should be"),
        ("POST", search, {"json": {"query": "x", "top_k": 2.0}}, 400, "top_k: Input should be"),
        (
            "POST",
            search,
            {"content": b'{"query": "x", "score_threshold": NaN}', "headers": JSON},
            400,
            "score_threshold: score_threshold must be a finite number",
        ),
        (
            "POST",
            "/v1/knowledge-bases/" + "n" * 5_000 + "/search",
            {"json": {"query": "x"}},
            404,
            "n" * 200 + "... (5000 characters)",
        ),
        ("POST", search, {"json": ["a list"]}, 400, "must be a JSON object"),
        ("POST", search, {"json": {}}, 400, "query: Field required"),
        ("POST", search, {"json": {"query": ""}}, 400, "query: query is empty"),
        ("POST", search, {"json": {"query": "x", "top_k": 0}}, 400, "top_k"),
        ("POST", search, {"json": {"query": "x", "top_k": 51}}, 400, "less than or equal to 50"),
        ("POST", search, {"json": {"query": "x", "top_k": "many"}}, 400, "top_k"),
        ("POST", search, {"json": {"query": "x", "sort": "asc"}}, 400, "sort: Extra inputs"),
        ("POST", search, {"json": {"query": "x" * 101}}, 400, "at most 100 are accepted"),
        ("POST", search, {"json": {"query": "x", "filter": {"a": [1]}}}, 400, "filter: a must be"),
        ("POST", search, {"json": {"query": "x", "filter": {"a": {}}}}, 400, "empty mapping"),
        ("POST", search, {"json": {"query": "x", "filter": {"a": None}}}, 400, "filter"),
        ("POST", search, {"content": b"x" * 5000, "headers": JSON}, 413, "larger than 2048 bytes"),
        ("POST", "/v1/knowledge-bases/nope/search", {"json": {"query": "x"}}, 404, "'nope'"),
        ("GET", "/v1/knowledge-bases/nope/documents", {}, 404, "served: tutorial, howto"),
        ("GET", "/v1/knowledge-bases/tutorial/documents?limit=0", {}, 400, "limit must be"),
        ("GET", "/v1/knowledge-bases/tutorial/documents?offset=x", {}, 400, "offset must be"),
        (  # the last would win unseen: the long Schemathesis run sent limit=-5&limit=5
            "GET",
            "/v1/knowledge-bases/tutorial/documents?limit=-5&limit=5",
            {},
            400,
            "limit is given 2 times; give it once",
        ),
        ("GET", "/v1/nothing-here", {}, 404, "no route GET /v1/nothing-here"),
        ("GET", search, {}, 405, "GET is not allowed"),
    ]
    with httpx.Client(base_url=server.url) as client:
        for method, path, send, status, message in cases:
            answer = client.request(method, path, **send)  # type: ignore[arg-type]
            assert answer.status_code == status, (path[:80], send, answer.text)
            assert message in answer.json()["error"]["message"], (path[:80], send, answer.text)
            assert "Traceback" not in answer.text
            assert len(answer.text) < 1000  # a long name is not echoed whole
        # A body streamed without a length is cut at the limit too.
        chunks = iter([b'{"query": "', b"x" * 3000, b'"}'])
        answer = client.post(search, content=chunks, headers=JSON)
        assert answer.status_code == 413, answer.text
    assert "Traceback" not in server.log


async def test_with_a_token_every_request_needs_it_and_it_is_never_logged(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    paths = ["/healthz", "/readyz", "/openapi.json", "/v1/knowledge-bases"]
    with httpx.Client(base_url=server.url) as client:
        for headers in (
            {},
            {"Authorization": "Bearer wrong-token-0123456789"},
            {"Authorization": TOKEN},
        ):
            for path in paths:
                answer = client.get(path, headers=headers)
                assert answer.status_code == 401, (path, headers)
                assert "bearer token" in answer.json()["error"]["message"]
                assert answer.headers["www-authenticate"].startswith("Bearer")
            refused = client.post(
                "/mcp",
                headers=headers,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
            )
            assert refused.status_code == 401
        good = {"Authorization": f"Bearer {TOKEN}"}
        for path in paths:
            assert client.get(path, headers=good).status_code == 200
        answer = client.post(
            "/v1/knowledge-bases/tutorial/search", headers=good, json={"query": QUERY}
        )
        assert answer.status_code == 200
        assert client.get("/openapi.json", headers=good).json()["security"] == [{"bearer": []}]
    assert server.stop() == 0
    assert TOKEN not in server.log
    assert len(server.access_lines()) == 3 * len(paths) + 3 + len(paths) + 2


async def test_a_short_token_is_refused_at_start(indexed: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "ragflow_config.cli",
            "serve",
            str(indexed),
            "--port",
            "0",
            "--token-env",
            "MY_TOKEN",
        ],
        env={**os.environ, "MY_TOKEN": "tooshort"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2  # a configuration error: the exit-code contract
    assert "error: $MY_TOKEN must be at least 16 characters" in done.stderr
    assert "tooshort" not in done.stderr


async def test_one_access_line_per_request_without_the_query_unless_asked(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    secret_query = "confidential merger plans for files"
    for flags, logged in (((), False), (("--log-queries",), True)):
        server = server_process(str(indexed), *flags)
        with httpx.Client(base_url=server.url) as client:
            client.post("/v1/knowledge-bases/tutorial/search?q=x", json={"query": secret_query})
            client.get("/v1/knowledge-bases")
        assert server.stop() == 0
        lines = server.access_lines()
        assert len(lines) == 2, server.log
        assert '"POST /v1/knowledge-bases/tutorial/search" 200' in lines[0]
        assert "q=x" not in lines[0]
        assert (secret_query in server.log) is logged
        assert (secret_query in lines[0]) is logged


async def test_the_openapi_description_covers_every_route(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed))
    with httpx.Client(base_url=server.url) as client:
        document = client.get("/openapi.json").json()
        assert document["openapi"] == "3.1.0"
        assert "security" not in document
        schemas = document["components"]["schemas"]
        refs = {
            part.rsplit("/", 1)[1]
            for part in json.dumps(document).split('"$ref": "')[1:]
            for part in [part.split('"', 1)[0]]
        }
        assert refs <= set(schemas), refs - set(schemas)
        assert schemas["SearchRequest"]["properties"]["top_k"]["maximum"] == 50
        for path, operations in document["paths"].items():
            concrete = path.replace("{name}", "tutorial")
            for method in operations:
                kwargs = {"json": {"query": "files"}} if method == "post" else {}
                answer = client.request(method.upper(), concrete, **kwargs)  # type: ignore[arg-type]
                assert str(answer.status_code) in operations[method]["responses"], (
                    path,
                    answer.text,
                )
                accepted = 202 if path.endswith("/refresh") else 200  # runs in the background
                assert answer.status_code == accepted, (path, answer.text)
                # The guards' and the transport's answers are documented on every route
                # (the long Schemathesis run met an undocumented 414).
                assert {"403", "408", "414", "431"} <= set(operations[method]["responses"])
                long_url = client.request(method.upper(), concrete + "?x=" + "a" * 9000)
                assert str(long_url.status_code) in operations[method]["responses"]


async def test_a_knowledge_base_not_indexed_yet_answers_nothing_and_is_not_created(
    tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    file = write_pipeline(tmp_path)
    server = server_process(str(file))
    with httpx.Client(base_url=server.url) as client:
        assert client.get("/readyz").json()["knowledge_bases"] == {
            "tutorial": "empty: not indexed yet",
            "howto": "empty: not indexed yet",
        }
        answer = client.post("/v1/knowledge-bases/tutorial/search", json={"query": QUERY})
        assert answer.status_code == 200 and answer.json()["hits"] == []
        assert client.get("/v1/knowledge-bases/howto/documents").json()["total"] == 0
        called = tool_call(client, {"query": QUERY})
        assert called["content"][0]["text"] == "No relevant content found."
    assert server.stop() == 0
    async with Pipeline.load(file).build() as built:
        assert not await built.knowledge_base("tutorial").vector_store.has_collection("shared")


async def test_a_browser_origin_named_with_cors_origin_may_call_it(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    origin = "https://app.example.com"
    server = server_process(
        str(indexed), "--cors-origin", origin, env={"RAGFLOW_SERVE_TOKEN": TOKEN}
    )
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization, content-type",
    }
    with httpx.Client(base_url=server.url) as client:
        for path in ("/v1/knowledge-bases/tutorial/search", "/mcp"):
            allowed = client.options(path, headers={"Origin": origin, **preflight})
            assert allowed.status_code == 200, allowed.text  # no token on a preflight
            assert allowed.headers["access-control-allow-origin"] == origin
            other = client.options(path, headers={"Origin": "https://evil.example", **preflight})
            assert "access-control-allow-origin" not in other.headers
        answer = client.post(
            "/v1/knowledge-bases/tutorial/search",
            headers={"Origin": origin, "Authorization": f"Bearer {TOKEN}"},
            json={"query": QUERY},
        )
        assert answer.status_code == 200
        assert answer.headers["access-control-allow-origin"] == origin
        mcp = client.post(
            "/mcp",
            headers={
                "Origin": origin,
                "Authorization": f"Bearer {TOKEN}",
                "Accept": "application/json, text/event-stream",
            },
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        )
        assert mcp.status_code == 200, mcp.text
        assert mcp.headers["access-control-allow-origin"] == origin
        refused = client.post(
            "/v1/knowledge-bases/tutorial/search", headers={"Origin": origin}, json={"query": "x"}
        )
        assert refused.status_code == 401


async def test_a_port_in_use_is_one_error_line(indexed: Path) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        done = subprocess.run(
            [sys.executable, "-m", "ragflow_config.cli", "serve", str(indexed), "--port", port],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 1
    assert done.stderr == (
        f"error: cannot listen on 127.0.0.1:{port}: Address already in use; "
        "choose another --port, or 0 for any free one\n"
    )
