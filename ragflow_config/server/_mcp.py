"""The MCP face of a ``KnowledgeService``: the ``search_knowledge`` tool and read-only resources.

Built on the SDK's low-level ``Server`` so the tool is declared exactly as
the agentic ``RAGMiddleware`` declares it (name, description, JSON Schema),
not re-derived from a Python signature. Resources:

- ``ragflow://knowledge-bases``: every served knowledge base, as JSON;
- ``ragflow://knowledge-bases/{name}/documents``: its documents, as JSON;
- ``ragflow://knowledge-bases/{name}/documents/{document_id}``: a document's text.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any
from urllib.parse import quote, unquote

import jsonschema
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types.jsonrpc import INTERNAL_ERROR, INVALID_PARAMS

from .. import __version__
from .._search_input import SearchInputError, checked_query
from ..message import DataBlock, TextBlock
from ._refresh import Refresher
from ._service import KnowledgeService, NotFound, ServiceError, Unavailable
from ._settings import ServeOptions

logger = logging.getLogger("ragflow_config.server")
access_logger = logging.getLogger("ragflow_config.server.access")

SCHEME = "ragflow://knowledge-bases"
MAX_DOCUMENT_CHUNKS = 500

INSTRUCTIONS = (
    "Read-only search over knowledge bases built by ragflow-config. Call search_knowledge "
    "with a self-contained query; the resources list the knowledge bases and their documents."
)


def _tool_declaration(service: KnowledgeService) -> types.Tool:
    tool = service.tool
    return types.Tool(
        name=tool.name,
        description=tool.description,
        input_schema=tool.input_schema,
        annotations=types.ToolAnnotations(
            read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
        ),
    )


def _content(blocks: list[TextBlock | DataBlock]) -> list[types.ContentBlock]:
    """The tool's blocks as MCP content: text as it is; data as an image, audio or a link."""
    content: list[types.ContentBlock] = []
    for block in blocks:
        if isinstance(block, TextBlock):
            content.append(types.TextContent(type="text", text=block.text))
            continue
        source = block.source
        media = source.media_type
        if source.type == "base64" and media.startswith("image/"):
            content.append(types.ImageContent(type="image", data=source.data, mime_type=media))
        elif source.type == "base64" and media.startswith("audio/"):
            content.append(types.AudioContent(type="audio", data=source.data, mime_type=media))
        elif source.type == "url":
            content.append(
                types.ResourceLink(
                    type="resource_link",
                    uri=str(source.url),
                    name=block.name or str(source.url),
                    mime_type=media,
                )
            )
        else:
            content.append(types.TextContent(type="text", text=f"<{media} content>"))
    return content


def _error_result(message: str) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def check_arguments(
    service: KnowledgeService, options: ServeOptions, arguments: dict[str, Any]
) -> str | None:
    """Why the arguments are refused (as the agent's ``Toolkit`` words it), or None."""
    tool = service.tool
    problem = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(tool.input_schema).iter_errors(arguments)
    )
    if problem is not None:
        where = "/".join(str(part) for part in problem.absolute_path)
        at = f" at {where}" if where else ""
        return f"Input validation failed for tool {tool.name}{at}: {problem.message}"
    try:
        checked_query(arguments["query"], max_chars=options.max_query_chars)
    except SearchInputError as exc:
        return f"Input validation failed for tool {tool.name} at query: {exc}"
    return None


REFRESH_TOOL = "refresh_knowledge_base"


def _refresh_declaration(service: KnowledgeService) -> types.Tool:
    return types.Tool(
        name=REFRESH_TOOL,
        description="Index again what changed in a knowledge base's sources since its last "
        "run, in the server; answers at once with the refresh's status (it runs in the "
        "background, and a second call while it runs joins it).",
        input_schema={
            "type": "object",
            "properties": {"knowledge_base": {"type": "string", "enum": service.names}},
            "required": ["knowledge_base"],
            "additionalProperties": False,
        },
    )


def create_mcp_server(
    service: KnowledgeService,
    options: ServeOptions | None = None,
    refresher: Refresher | None = None,
    *,
    log_requests: bool = False,
) -> Server[Any]:
    """An MCP server over ``service``. ``log_requests``: one access line per MCP request (stdio).
    With ``refresher``, the ``refresh_knowledge_base`` tool too."""
    options = options or ServeOptions()

    def logged(what: str, started: float, outcome: str, query: str | None = None) -> None:
        if not (log_requests and options.access_log):
            return
        elapsed = (time.perf_counter() - started) * 1000
        text = f" query={query!r}" if query is not None and options.log_queries else ""
        access_logger.info("mcp %s %s %.1fms%s", what, outcome, elapsed, text)

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        started = time.perf_counter()
        tools = [_tool_declaration(service)]
        if refresher is not None:
            tools.append(_refresh_declaration(service))
        result = types.ListToolsResult(tools=tools)
        logged("tools/list", started, "ok")
        return result

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        started = time.perf_counter()
        name = service.tool.name
        if params.name == REFRESH_TOOL and refresher is not None:
            return _refresh(params.arguments or {})
        if params.name != name:
            logged(f"tools/call {params.name}", started, "unknown tool")
            return _error_result(f"Unknown tool {params.name!r} (available: {name}).")
        arguments = dict(params.arguments or {})
        problem = check_arguments(service, options, arguments)
        query = arguments.get("query") if isinstance(arguments.get("query"), str) else None
        if problem is not None:
            logged(f"tools/call {name}", started, "invalid", query)
            return _error_result(problem)
        try:
            blocks = await service.call_tool(arguments)
        except ServiceError as exc:
            logged(f"tools/call {name}", started, f"error {exc.status}", query)
            retry = " Try again shortly." if isinstance(exc, Unavailable) else ""
            return _error_result(f"Tool {name} failed: {exc}.{retry}")
        logged(f"tools/call {name}", started, "ok", query)
        return types.CallToolResult(content=_content(blocks))

    def _refresh(arguments: dict[str, Any]) -> types.CallToolResult:
        started = time.perf_counter()
        assert refresher is not None
        wanted = arguments.get("knowledge_base")
        if set(arguments) != {"knowledge_base"} or wanted not in service.names:
            logged(f"tools/call {REFRESH_TOOL}", started, "invalid")
            return _error_result(
                f"Input validation failed for tool {REFRESH_TOOL}: give knowledge_base, one "
                f"of {', '.join(service.names)}."
            )
        begun = refresher.request("request")
        status = {"knowledge_base": wanted, "started": begun, "refresh": refresher.status(wanted)}
        logged(f"tools/call {REFRESH_TOOL}", started, "ok")
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=json.dumps(status))]
        )

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        started = time.perf_counter()
        resources = [
            types.Resource(
                uri=SCHEME,
                name="knowledge-bases",
                title="Knowledge bases",
                description="The knowledge bases this server searches, with their descriptions.",
                mime_type="application/json",
            )
        ]
        for info in service.infos:
            resources.append(
                types.Resource(
                    uri=f"{SCHEME}/{quote(info.name, safe='')}/documents",
                    name=f"{info.name}-documents",
                    title=f"Documents of {info.name}",
                    description=f"The documents of {info.name}: {info.description}",
                    mime_type="application/json",
                )
            )
        logged("resources/list", started, "ok")
        return types.ListResourcesResult(resources=resources)

    async def list_templates(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=SCHEME + "/{knowledge_base}/documents/{document_id}",
                    name="document",
                    title="A document's text",
                    description="The text of one document, chunk by chunk, as it is stored "
                    "(document ids come from the documents listing).",
                    mime_type="text/plain",
                )
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        started = time.perf_counter()
        uri = str(params.uri)
        try:
            contents = await _read(service, uri)
        except ServiceError as exc:
            logged("resources/read", started, f"error {exc.status}")
            raise MCPError(
                INVALID_PARAMS if exc.status < 500 else INTERNAL_ERROR, str(exc)
            ) from None
        logged("resources/read", started, "ok")
        return types.ReadResourceResult(contents=[contents])

    return Server(
        "ragflow-config",
        version=__version__,
        title="ragflow-config knowledge bases",
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
    )


async def _read(service: KnowledgeService, uri: str) -> types.TextResourceContents:
    if uri == SCHEME:
        listing = [{"name": info.name, "description": info.description} for info in service.infos]
        return types.TextResourceContents(
            uri=uri, mime_type="application/json", text=json.dumps(listing, ensure_ascii=False)
        )
    rest = uri.removeprefix(SCHEME + "/") if uri.startswith(SCHEME + "/") else None
    parts = rest.split("/") if rest else []
    if len(parts) == 2 and parts[1] == "documents":
        documents = await service.list_documents(unquote(parts[0]))
        text = json.dumps([d.model_dump(mode="json") for d in documents], ensure_ascii=False)
        return types.TextResourceContents(uri=uri, mime_type="application/json", text=text)
    if len(parts) == 3 and parts[1] == "documents":
        text = await service.document_text(
            unquote(parts[0]), unquote(parts[2]), max_chunks=MAX_DOCUMENT_CHUNKS
        )
        return types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)
    raise NotFound(f"no resource {uri!r}; list them with resources/list")
