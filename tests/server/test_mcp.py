"""The SDK's own MCP client against `ragflow-config serve`, over stdio and over streamable HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client, ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from ragflow_config.middleware import RAGMiddleware
from ragflow_config.middleware._rag.format import format_results
from ragflow_config.pipeline import Pipeline
from ragflow_config.server import KnowledgeService, tool_middleware_index

from ._serving import TOKEN, ServerProcess, index, write_pipeline

QUERY = "read a file line by line"


async def _in_process(file: Path) -> dict[str, Any]:
    """What the agent's own tool and KnowledgeBase.search answer, before the server opens the store."""
    async with Pipeline.load(file).build() as built:
        middleware = built.middlewares[0]
        assert isinstance(middleware, RAGMiddleware)
        [tool] = await middleware.list_tools()
        hits = await built.knowledge_base("tutorial").search([QUERY], top_k=3)
        return {
            "declaration": (tool.name, tool.description, tool.input_schema),
            "both": "".join(b.text for b in await tool.call(query=QUERY)),  # type: ignore[union-attr]
            "tutorial": "".join(
                b.text  # type: ignore[union-attr]
                for b in await tool.call(query=QUERY, knowledge_bases=["tutorial"])
            ),
            "search": "".join(b.text for b in format_results(hits)),  # type: ignore[union-attr]
            "documents": sorted(
                d.source for d in await built.knowledge_base("howto").list_documents()
            ),
        }


async def _exercise(session: ClientSession | Client, expected: dict[str, Any]) -> None:
    tools = (await session.list_tools()).tools
    # Over HTTP the server also offers refresh_knowledge_base (tests/server/test_refresh.py).
    searching = [t for t in tools if t.name != "refresh_knowledge_base"]
    assert [(t.name, t.description, t.input_schema) for t in searching] == [expected["declaration"]]
    assert tools[0].annotations is not None and tools[0].annotations.read_only_hint

    both = await session.call_tool("search_knowledge", {"query": QUERY})
    assert not both.is_error
    assert [c.text for c in both.content] == [expected["both"]]  # type: ignore[union-attr]

    tutorial = await session.call_tool(
        "search_knowledge", {"query": QUERY, "knowledge_bases": ["tutorial"]}
    )
    assert [c.text for c in tutorial.content] == [expected["tutorial"]]  # type: ignore[union-attr]
    assert expected["tutorial"] == expected["search"]  # one base: KnowledgeBase.search's order

    for arguments, message in [
        ({"query": ""}, "at query: '' should be non-empty"),
        ({"query": "x", "knowledge_bases": ["elsewhere"]}, "at knowledge_bases/0"),
        ({"query": "x", "top_k": 50}, "Additional properties are not allowed"),
        ({"query": "x" * 2001}, "2001 characters; at most 2000 are accepted"),
    ]:
        refused = await session.call_tool("search_knowledge", arguments)
        assert refused.is_error
        assert message in refused.content[0].text  # type: ignore[union-attr]

    resources = {str(r.uri) for r in (await session.list_resources()).resources}
    assert resources == {
        "ragflow://knowledge-bases",
        "ragflow://knowledge-bases/tutorial/documents",
        "ragflow://knowledge-bases/howto/documents",
    }
    listing = await session.read_resource("ragflow://knowledge-bases")
    assert [kb["name"] for kb in json.loads(listing.contents[0].text)] == ["tutorial", "howto"]  # type: ignore[union-attr]
    documents = json.loads(
        (await session.read_resource("ragflow://knowledge-bases/howto/documents")).contents[0].text  # type: ignore[union-attr]
    )
    assert sorted(d["source"] for d in documents) == expected["documents"]
    logging = next(d for d in documents if d["source"] == "logging.md")
    text = await session.read_resource(
        f"ragflow://knowledge-bases/howto/documents/{logging['document_id']}"
    )
    assert "zanzibar" in text.contents[0].text  # type: ignore[union-attr]
    with pytest.raises(MCPError, match="no document"):
        await session.read_resource("ragflow://knowledge-bases/tutorial/documents/nope")


async def test_over_stdio_the_tool_is_the_agents_tool(indexed: Path, tmp_path: Path) -> None:
    expected = await _in_process(indexed)
    parameters = StdioServerParameters(
        command=sys.executable, args=["-m", "ragflow_config.cli", "serve", "--stdio", str(indexed)]
    )
    errors = tmp_path / "stderr.txt"
    with errors.open("w") as errlog:
        async with (
            stdio_client(parameters, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()  # the handshake desktop clients use
            await _exercise(session, expected)
    log = errors.read_text()
    assert "ragflow_config.server.access: mcp tools/call search_knowledge ok" in log, log
    assert QUERY not in log


async def test_over_streamable_http_with_a_token(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    expected = await _in_process(indexed)
    server = server_process(str(indexed), env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    url = server.url + "/mcp"
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        await _exercise(client, expected)
    async with (
        httpx2.AsyncClient(headers=headers) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert [t.name for t in (await session.list_tools()).tools] == [
            "search_knowledge",
            "refresh_knowledge_base",
        ]
    async with httpx2.AsyncClient() as http:
        with pytest.raises(Exception) as refused:
            async with Client(streamable_http_client(url, http_client=http)) as client:
                await client.list_tools()
        assert refused.value is not None
    assert server.stop() == 0
    assert any('"POST /mcp" 401' in line for line in server.access_lines()), server.log
    assert TOKEN not in server.log


@pytest.mark.parametrize(
    ("middlewares", "chosen"),
    [
        ("", None),
        (
            "middlewares:\n  - {type: rag, knowledge_bases: [tutorial], parameters: {mode: static}}\n"
            "  - {type: rag, knowledge_bases: [tutorial, howto], parameters: {top_k: 2}}\n",
            1,
        ),
        (
            "middlewares:\n  - {type: rag, knowledge_bases: [howto], parameters: {mode: static, "
            "top_k: 1}}\n",
            0,
        ),
    ],
)
async def test_the_tool_follows_the_middlewares_block(
    tmp_path: Path, middlewares: str, chosen: int | None
) -> None:
    file = write_pipeline(tmp_path, middlewares=middlewares)
    await index(file)
    pipeline = Pipeline.load(file)
    assert tool_middleware_index(pipeline.spec, pipeline.knowledge_base_names) == chosen
    async with KnowledgeService(pipeline) as service:
        blocks = await service.call_tool({"query": "file sorted list logging"})
        text = "".join(b.text for b in blocks)  # type: ignore[union-attr]
        hits = text.count("(source: ")
        enum = service.tool.input_schema["properties"]["knowledge_bases"]["anyOf"][0]["items"]
        if chosen is None:  # no middleware: every base, the defaults (top_k 5)
            assert hits == 5 and enum["enum"] == ["tutorial", "howto"]
        elif chosen == 1:  # the agentic one, with its top_k
            assert hits == 2 and enum["enum"] == ["tutorial", "howto"]
        else:  # only a static one: its bases and top_k, offered as a tool
            assert hits == 1 and enum["enum"] == ["howto"]
            assert "(source: logging.md)" in text or "(source: sorting.md)" in text


async def test_the_tool_reranks_with_the_middlewares_rerank_model(tmp_path: Path) -> None:
    from model._server import ChatServer, completion

    chat = ChatServer()
    chat.start()
    try:
        middlewares = (
            "chat_models:\n"
            f"  reranker: {{type: openai_compatible, parameters: {{base_url: '{chat.url}', "
            "model: judge}}\n"
            "middlewares:\n"
            "  - type: rag\n"
            "    knowledge_bases: [tutorial]\n"
            "    rerank_model: reranker\n"
            "    parameters: {mode: agentic, top_k: 2, rerank_candidate_k: 3}\n"
        )
        file = write_pipeline(tmp_path, middlewares=middlewares)
        await index(file)
        chat.replies.append(completion('{"ids": ["c3", "c2"]}'))
        async with KnowledgeService(Pipeline.load(file)) as service:
            candidates = await (await service.knowledge_base("tutorial")).search([QUERY], top_k=3)
            blocks = await service.call_tool({"query": QUERY})
        assert len(chat.requests) == 1  # the middleware's reranker judged the candidates
        chosen = [candidates[2], candidates[1]]
        assert "".join(b.text for b in blocks) == "".join(  # type: ignore[union-attr]
            b.text  # type: ignore[union-attr]
            for b in format_results(chosen)
        )
        assert "(source: files.md" in "".join(b.text for b in blocks)  # type: ignore[union-attr]
    finally:
        chat.stop()
