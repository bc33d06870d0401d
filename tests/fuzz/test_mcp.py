"""Fuzzing MCP at a real `ragflow-config serve` through the SDK's own client.

One server process and one client session (streamable HTTP, with the token)
for the module; the session lives in an event loop of its own thread (an
anyio blocking portal), so Hypothesis drives it from plain test functions.
Every call, however wrong its arguments, tool name or URI, must come back as
a result, a tool error (``isError``) or a JSON-RPC error; after it a good
call on the same session must still work, and the server must still run
with no traceback in its log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest

pytest.importorskip("mcp", reason="the serve extra is not installed (pip install -e .[serve])")

import httpx2
import mcp_types as types
from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import example, given
from hypothesis import strategies as st
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from pydantic import TypeAdapter
from server._serving import TOKEN, ServerProcess, index, write_pipeline

from ._profile import fuzzing

TOOL = "search_knowledge"
GOOD = {"query": "read a file line by line"}
SCHEME = "ragflow://knowledge-bases"
ANY_RESULT = TypeAdapter(dict[str, Any])


@dataclass
class Connected:
    server: ServerProcess
    portal: BlockingPortal
    session: ClientSession

    def call(self, function: Any, *args: Any) -> Any:
        return self.portal.call(function, *args)

    def still_serves(self) -> None:
        """A good call on the same session answers, and the server runs with a clean log."""
        result = self.call(self.session.call_tool, TOOL, GOOD)
        assert not result.is_error, result
        assert "(source: " in result.content[0].text
        assert self.server.process.poll() is None, self.server.log
        assert "Traceback" not in self.server.log, self.server.log


@asynccontextmanager
async def _session(url: str) -> Any:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {TOKEN}"}) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@pytest.fixture(scope="module")
def connected(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Connected]:
    folder = tmp_path_factory.mktemp("mcp")
    file = write_pipeline(folder)
    asyncio.run(index(file))
    with (
        ServerProcess(str(file), env={"RAGFLOW_SERVE_TOKEN": TOKEN}) as server,
        start_blocking_portal() as portal,
        portal.wrap_async_context_manager(_session(server.url + "/mcp")) as session,
    ):
        yield Connected(server, portal, session)
        assert server.process.poll() is None, server.log
        assert "Traceback" not in server.log, server.log


def _raw_call(connected: Connected, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """A request whose params the typed helpers would refuse to build (arguments not an object)."""
    request = types.Request[dict[str, Any], str](method=method, params=params)
    result: dict[str, Any] = connected.call(connected.session.send_request, request, ANY_RESULT)
    return result


# -- strategies -------------------------------------------------------------------

ODD_TEXT = st.sampled_from(
    [
        "",
        " ",
        "\t\n ",
        "\x00",
        "\u200b",  # zero-width space: not blank to str.strip()
        "\ufeff",
        "\U0001f600" * 3,
        "a\u0301",  # a combining accent
        "\u202eevil",  # right-to-left override
        "x" * 2000,
        "x" * 2001,
        "zanzibar " * 400,
        "../../etc/passwd",
        "%2F%2E%2E",
        "' OR 1=1 --",
        '{"$ne": null}',
    ]
)
TEXT = st.one_of(st.text(), ODD_TEXT, st.text(min_size=1500, max_size=2500))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
KNOWLEDGE_BASES = st.one_of(
    JSON,
    st.lists(st.sampled_from(["tutorial", "howto", "elsewhere", "", "TUTORIAL", "tutorial "])),
    st.lists(TEXT, max_size=3),
)
ARGUMENTS = st.one_of(
    st.fixed_dictionaries({"query": TEXT}),
    st.fixed_dictionaries({"query": TEXT}, optional={"knowledge_bases": KNOWLEDGE_BASES}),
    st.fixed_dictionaries(
        {"query": st.one_of(JSON, TEXT)},
        optional={"knowledge_bases": KNOWLEDGE_BASES, "top_k": JSON, "filter": JSON},
    ),
    st.dictionaries(st.text(max_size=16) | st.sampled_from(["query", "knowledge_bases"]), JSON),
    st.none(),
)
TOOL_NAMES = st.one_of(st.just(TOOL), st.sampled_from(["", " ", TOOL.upper(), TOOL + " "]), TEXT)
URIS = st.one_of(
    st.sampled_from(
        [
            SCHEME,
            SCHEME + "/",
            SCHEME + "/tutorial/documents",
            SCHEME + "/howto/documents/",
            SCHEME + "/elsewhere/documents",
            SCHEME + "/tutorial/documents/nope",
            SCHEME + "/tutorial/documents/%00",
            SCHEME + "/%2e%2e/documents",
            SCHEME + "/tutorial/documents/a/b",
            "ragflow://",
            "file:///etc/passwd",
            "http://127.0.0.1/",
        ]
    ),
    st.builds(lambda rest: f"{SCHEME}/{rest}", TEXT),
    st.builds(lambda kb, rest: f"{SCHEME}/{kb}/documents/{rest}", TEXT, TEXT),
    TEXT,
)


# -- the fuzzers ------------------------------------------------------------------


@fuzzing
@given(name=TOOL_NAMES, arguments=ARGUMENTS)
@example(name=TOOL, arguments={"query": "\u200b"})
@example(name=TOOL, arguments={"query": "x", "knowledge_bases": None})
def test_any_tool_call_is_answered_and_the_session_goes_on(
    connected: Connected, name: str, arguments: dict[str, Any] | None
) -> None:
    try:
        result = connected.call(connected.session.call_tool, name, arguments)
    except MCPError as error:  # a JSON-RPC error is an answer too
        assert error.error.message, error
    else:
        assert isinstance(result, types.CallToolResult)
        assert result.content and all(c.type == "text" for c in result.content), result
        if name != TOOL:
            assert result.is_error and "Unknown tool" in result.content[0].text, result
    connected.still_serves()


@fuzzing
@given(arguments=st.one_of(st.lists(JSON, max_size=3), TEXT, st.integers(), st.booleans()))
def test_arguments_that_are_not_an_object_are_refused(connected: Connected, arguments: Any) -> None:
    try:
        result = _raw_call(connected, "tools/call", {"name": TOOL, "arguments": arguments})
    except MCPError as error:
        assert error.error.message, error
    else:
        assert result.get("isError") is True, result
    connected.still_serves()


@fuzzing
@given(uri=URIS)
@example(uri=SCHEME + "/tutorial/documents/nope")
def test_any_resource_read_is_answered_and_the_session_goes_on(
    connected: Connected, uri: str
) -> None:
    try:
        result = connected.call(connected.session.read_resource, uri)
    except MCPError as error:
        assert error.error.message, error
    else:
        assert isinstance(result, types.ReadResourceResult) and result.contents, result
    connected.still_serves()
