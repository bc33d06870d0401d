"""The HTTP face: a small JSON API, MCP over streamable HTTP at ``/mcp``, and their guards.

Routes (all JSON; an error is ``{"error": {"message": ...}}`` with a 4xx or
503 status, never a traceback):

- ``GET /healthz``: the process answers;
- ``GET /readyz``: every store answers (503 when one does not);
- ``GET /v1/knowledge-bases`` and ``GET /v1/knowledge-bases/{name}``;
- ``GET /v1/knowledge-bases/{name}/documents?offset=&limit=``;
- ``POST /v1/knowledge-bases/{name}/search``: ``{"query", "top_k", "score_threshold", "filter"}``;
- ``GET /openapi.json``: the OpenAPI 3.1 description of the above.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic.json_schema import models_json_schema
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import __version__
from .._search_input import MAX_TOP_K
from ..pipeline import Pipeline
from ..rag import DocumentSummary, VectorSearchResult
from ..rag._stores.base import flatten_filter
from ._auth import BearerTokenMiddleware
from ._mcp import create_mcp_server
from ._service import BadRequest, KnowledgeService, ServiceError
from ._settings import ServeOptions

access_logger = logging.getLogger("ragflow_config.server.access")
logger = logging.getLogger("ragflow_config.server")

RETRY_AFTER_SECONDS = "5"


# -- the API's shapes (also its OpenAPI components) --------------------------


class SearchRequest(BaseModel):
    """One query against one knowledge base."""

    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, description="What to find, in plain words.")
    top_k: int = Field(default=5, ge=1, le=MAX_TOP_K, description="Most hits to return.")
    score_threshold: float | None = Field(
        default=None, description="Drop hits scoring below this (the store's metric scale)."
    )
    filter: dict[str, Any] | None = Field(
        default=None,
        description="Only chunks whose metadata matches every key (nested objects nest); "
        "always within the knowledge base's own metadata_filter, which it can never widen.",
    )


class SearchResponse(BaseModel):
    """Hits best first, each as `ragflow-config search --json` prints it."""

    knowledge_base: str
    hits: list[VectorSearchResult]


class KnowledgeBaseItem(BaseModel):
    name: str
    description: str


class KnowledgeBasesResponse(BaseModel):
    knowledge_bases: list[KnowledgeBaseItem]


class DocumentsResponse(BaseModel):
    """A page of a knowledge base's documents, by source path."""

    knowledge_base: str
    total: int
    offset: int
    limit: int
    documents: list[DocumentSummary]


class ErrorDetail(BaseModel):
    message: str


class ErrorResponse(BaseModel):
    error: ErrorDetail


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    status: str = Field(description="ready, or unavailable (with status 503)")
    knowledge_bases: dict[str, str] = Field(
        default_factory=dict, description="Each knowledge base's collection: ready or empty."
    )
    error: ErrorDetail | None = None


# -- guards: body size, access log, errors ------------------------------------


class _BodyTooLarge(Exception):
    pass


def _error(status: int, message: str, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": {"message": message}}, status_code=status, headers=headers)


class AccessLogMiddleware:
    """One line per HTTP request: client, method, path (no query string), status, time.

    Query text is never logged unless ``log_queries`` (then the search query
    rides on the same line).
    """

    def __init__(self, app: ASGIApp, log_queries: bool = False) -> None:
        self.app = app
        self.log_queries = log_queries

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500

        async def send_and_note(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, send_and_note)
        finally:
            client = scope.get("client")
            where = client[0] if client else "-"
            line = json.dumps(f"{scope['method']} {scope['path']}", ensure_ascii=True)
            extra = ""
            query = scope.get("state", {}).get("query")
            if self.log_queries and query is not None:
                extra = " query=" + json.dumps(query, ensure_ascii=True)
            elapsed = (time.perf_counter() - started) * 1000
            access_logger.info("%s %s %d %.1fms%s", where, line, status, elapsed, extra)


class BodyLimitMiddleware:
    """413 for a body over ``limit`` bytes: by its Content-Length, or while it streams in."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    declared = int(value)
                except ValueError:
                    await _error(400, "invalid Content-Length")(scope, receive, send)
                    return
                if declared > self.limit:
                    await self._too_large(scope, receive, send)
                    return
        seen = 0

        async def counted() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _BodyTooLarge
            return message

        await self.app(scope, counted, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _error(413, f"the request body is larger than {self.limit} bytes")(
            scope, receive, send
        )


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return _error(404, f"no route {request.method} {request.url.path}; see /openapi.json")
    if exc.status_code == 405:
        return _error(405, f"{request.method} is not allowed on {request.url.path}")
    return _error(exc.status_code, str(exc.detail))


async def _on_service_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceError)
    headers = {"Retry-After": RETRY_AFTER_SECONDS} if exc.status == 503 else None
    return _error(exc.status, str(exc), headers)


async def _on_body_too_large(request: Request, exc: Exception) -> Response:
    limit = request.app.state.options.max_body_bytes
    return _error(413, f"the request body is larger than {limit} bytes")


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return _error(500, "internal error; the server's log has the details")


# -- routes -------------------------------------------------------------------


def _service(request: Request) -> KnowledgeService:
    service: KnowledgeService = request.app.state.service
    return service


async def _json_body(request: Request) -> Any:
    body = await request.body()
    if not body:
        raise BadRequest("the request needs a JSON body")
    try:
        return json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise BadRequest("the request body is not valid JSON") from None


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)


async def health(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


async def ready(request: Request) -> Response:
    try:
        report = await _service(request).readiness()
    except ServiceError as exc:
        body = {"status": "unavailable", "error": {"message": str(exc)}}
        return JSONResponse(body, status_code=503, headers={"Retry-After": RETRY_AFTER_SECONDS})
    return JSONResponse({"status": "ready", "knowledge_bases": report})


async def list_knowledge_bases(request: Request) -> Response:
    infos = _service(request).infos
    return JSONResponse(
        {"knowledge_bases": [{"name": i.name, "description": i.description} for i in infos]}
    )


async def knowledge_base(request: Request) -> Response:
    info = _service(request).info(request.path_params["name"])
    return JSONResponse({"name": info.name, "description": info.description})


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    raw = request.query_params.get(name)
    if raw is None:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name} must be an integer, not {raw[:40]!r}") from None
    if not low <= value <= high:
        raise BadRequest(f"{name} must be between {low} and {high}")
    return value


async def documents(request: Request) -> Response:
    options: ServeOptions = request.app.state.options
    name = request.path_params["name"]
    offset = _int_param(request, "offset", 0, 0, 10**9)
    limit = _int_param(request, "limit", options.max_list_limit, 1, options.max_list_limit)
    found = await _service(request).list_documents(name)
    page = found[offset : offset + limit]
    return JSONResponse(
        {
            "knowledge_base": name,
            "total": len(found),
            "offset": offset,
            "limit": limit,
            "documents": [d.model_dump(mode="json") for d in page],
        }
    )


async def search(request: Request) -> Response:
    options: ServeOptions = request.app.state.options
    name = request.path_params["name"]
    service = _service(request)
    service.info(name)  # 404 before reading the body
    payload = await _json_body(request)
    if not isinstance(payload, dict):
        raise BadRequest("the request body must be a JSON object")
    try:
        query = SearchRequest.model_validate(payload)
    except ValidationError as exc:
        raise BadRequest(_validation_message(exc)) from None
    request.state.query = query.query
    if len(query.query) > options.max_query_chars:
        raise BadRequest(
            f"query is {len(query.query)} characters; at most {options.max_query_chars} are accepted"
        )
    try:
        pairs = flatten_filter(query.filter)
    except ValueError as exc:
        raise BadRequest(str(exc).replace("metadata_filter", "filter")) from None
    if len(pairs) > options.max_filter_keys:
        raise BadRequest(f"filter names {len(pairs)} keys; at most {options.max_filter_keys}")
    hits = await service.search(
        name,
        query.query,
        top_k=query.top_k,
        score_threshold=query.score_threshold,
        where=query.filter,
    )
    return JSONResponse(
        {"knowledge_base": name, "hits": [hit.model_dump(mode="json") for hit in hits]}
    )


async def openapi(request: Request) -> Response:
    return JSONResponse(openapi_document(request.app.state.options))


# -- OpenAPI ------------------------------------------------------------------


def openapi_document(options: ServeOptions | None = None) -> dict[str, Any]:
    """The OpenAPI 3.1 description of the JSON API (MCP at ``/mcp`` speaks its own protocol)."""
    options = options or ServeOptions()
    models: list[type[BaseModel]] = [
        SearchRequest,
        SearchResponse,
        KnowledgeBasesResponse,
        KnowledgeBaseItem,
        DocumentsResponse,
        ErrorResponse,
        Health,
        Readiness,
    ]
    _, top = models_json_schema(
        [(model, "validation" if model is SearchRequest else "serialization") for model in models],
        ref_template="#/components/schemas/{model}",
    )
    schemas = top.get("$defs", {})

    def ref(name: str) -> dict[str, Any]:
        return {"$ref": f"#/components/schemas/{name}"}

    def answer(description: str, schema: str) -> dict[str, Any]:
        return {
            "description": description,
            "content": {"application/json": {"schema": ref(schema)}},
        }

    errors = {
        "401": answer("No or a wrong bearer token (when the server has one)", "ErrorResponse"),
        "503": answer("A store or the embedding service cannot be reached now", "ErrorResponse"),
    }
    name = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
    document: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "ragflow-config knowledge bases",
            "version": __version__,
            "description": "Read-only search over the knowledge bases of one pipeline file. "
            f"MCP (streamable HTTP) is served at {options.mcp_path}.",
        },
        "paths": {
            "/healthz": {
                "get": {
                    "summary": "The process answers",
                    "operationId": "health",
                    "responses": {"200": answer("Alive", "Health"), "401": errors["401"]},
                }
            },
            "/readyz": {
                "get": {
                    "summary": "Every store answers",
                    "operationId": "readiness",
                    "responses": {
                        "200": answer("Ready", "Readiness"),
                        "401": errors["401"],
                        "503": answer("Not ready", "Readiness"),
                    },
                }
            },
            "/v1/knowledge-bases": {
                "get": {
                    "summary": "The knowledge bases served",
                    "operationId": "listKnowledgeBases",
                    "responses": {
                        "200": answer("Names and descriptions", "KnowledgeBasesResponse"),
                        "401": errors["401"],
                    },
                }
            },
            "/v1/knowledge-bases/{name}": {
                "get": {
                    "summary": "One knowledge base",
                    "operationId": "getKnowledgeBase",
                    "parameters": [name],
                    "responses": {
                        "200": answer("Its name and description", "KnowledgeBaseItem"),
                        "401": errors["401"],
                        "404": answer("No such knowledge base", "ErrorResponse"),
                    },
                }
            },
            "/v1/knowledge-bases/{name}/documents": {
                "get": {
                    "summary": "A page of the documents of a knowledge base, by source",
                    "operationId": "listDocuments",
                    "parameters": [
                        name,
                        {
                            "name": "offset",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 0, "default": 0},
                        },
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": options.max_list_limit,
                                "default": options.max_list_limit,
                            },
                        },
                    ],
                    "responses": {
                        "200": answer("The page", "DocumentsResponse"),
                        "400": answer("A bad offset or limit", "ErrorResponse"),
                        "404": answer("No such knowledge base", "ErrorResponse"),
                        **errors,
                    },
                }
            },
            "/v1/knowledge-bases/{name}/search": {
                "post": {
                    "summary": "Search a knowledge base",
                    "operationId": "search",
                    "parameters": [name],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": ref("SearchRequest")}},
                    },
                    "responses": {
                        "200": answer("Hits, best first", "SearchResponse"),
                        "400": answer(
                            f"A malformed body, a query over {options.max_query_chars} "
                            "characters, or a bad filter",
                            "ErrorResponse",
                        ),
                        "404": answer("No such knowledge base", "ErrorResponse"),
                        "413": answer(
                            f"A body over {options.max_body_bytes} bytes", "ErrorResponse"
                        ),
                        **errors,
                    },
                }
            },
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
    if options.token is not None:
        document["security"] = [{"bearer": []}]
    return document


# -- the application ------------------------------------------------------------


def create_app(
    source: Pipeline | KnowledgeService,
    options: ServeOptions | None = None,
    *,
    knowledge_bases: list[str] | None = None,
    on_ready: Callable[[], Awaitable[None] | None] | None = None,
) -> Starlette:
    """The ASGI application: the JSON API and MCP, behind the token and the body limit.

    Given a ``Pipeline``, the application opens its knowledge bases in its
    lifespan (``uvicorn module:app`` works); given a ``KnowledgeService``,
    the caller has entered it.
    """
    options = options or ServeOptions()
    owned = isinstance(source, Pipeline)
    service = KnowledgeService(source, knowledge_bases) if isinstance(source, Pipeline) else source
    mcp_server = create_mcp_server(service, options)
    security = None
    if options.cors_origins and options.loopback:
        # The SDK guards a loopback server against DNS rebinding by Host and Origin;
        # the origins allowed here must pass that check too.
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=[
                "http://127.0.0.1:*",
                "http://localhost:*",
                "http://[::1]:*",
                *options.cors_origins,
            ],
        )
    mcp_app = mcp_server.streamable_http_app(
        streamable_http_path=options.mcp_path,
        stateless_http=True,  # read-only, no server-to-client messages: no session to keep
        json_response=True,
        max_request_body_size=options.max_body_bytes,
        transport_security=security,
        host=options.host,
    )
    routes: list[BaseRoute] = [
        Route("/healthz", health, methods=["GET"]),
        Route("/readyz", ready, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/v1/knowledge-bases", list_knowledge_bases, methods=["GET"]),
        Route("/v1/knowledge-bases/{name}", knowledge_base, methods=["GET"]),
        Route("/v1/knowledge-bases/{name}/documents", documents, methods=["GET"]),
        Route("/v1/knowledge-bases/{name}/search", search, methods=["POST"]),
        *mcp_app.routes,
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if owned:
                await stack.enter_async_context(service)
            await stack.enter_async_context(mcp_server.session_manager.run())
            if on_ready is not None:
                result = on_ready()
                if result is not None:
                    await result
            yield

    middleware = (
        [Middleware(AccessLogMiddleware, log_queries=options.log_queries)]
        if options.access_log
        else []
    )
    if options.cors_origins:
        # Outside the token check: a browser's preflight carries no Authorization header.
        middleware.append(
            Middleware(
                CORSMiddleware,
                allow_origins=list(options.cors_origins),
                allow_methods=["GET", "POST", "DELETE"],
                allow_headers=[
                    "Authorization",
                    "Content-Type",
                    "Mcp-Session-Id",
                    "Mcp-Protocol-Version",
                    "Last-Event-ID",
                ],
                expose_headers=["Mcp-Session-Id"],
            )
        )
    if options.token is not None:
        middleware.append(Middleware(BearerTokenMiddleware, token=options.token))
    middleware.append(Middleware(BodyLimitMiddleware, limit=options.max_body_bytes))
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={
            HTTPException: _on_http_exception,
            ServiceError: _on_service_error,
            _BodyTooLarge: _on_body_too_large,
            Exception: _on_unexpected,
        },
    )
    app.state.service = service
    app.state.options = options
    return app
