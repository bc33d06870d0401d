"""The HTTP face: a small JSON API, MCP over streamable HTTP at ``/mcp``, and their guards.

Routes (all JSON; an error is ``{"error": {"message": ...}}`` with a 4xx or
503 status, never a traceback):

- ``GET /healthz``: the process answers;
- ``GET /readyz``: every store answers (503 when one does not);
- ``GET /v1/knowledge-bases`` and ``GET /v1/knowledge-bases/{name}`` (with its refreshes);
- ``GET /v1/knowledge-bases/{name}/documents?offset=&limit=``;
- ``POST /v1/knowledge-bases/{name}/search``: ``{"query", "top_k", "score_threshold", "filter", "explain"}``
  (``query`` a string, or a list of them searched together as ``KnowledgeBase.search`` does);
- ``POST /v1/knowledge-bases/{name}/refresh``: run the pipeline file again in the server
  (``_refresh``); 202, and the refresh already running when there is one;
- ``GET /openapi.json``: the OpenAPI 3.1 description of the above;
- ``GET /metrics``: Prometheus metrics (``_metrics``), behind the token like the rest;
- ``/ui``, with ``ServeOptions.ui`` (``serve --ui``): the retrieval-testing page (``_ui``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Annotated, Any

from mcp.server.transport_security import TransportSecuritySettings
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StringConstraints,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.json_schema import models_json_schema
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Scope

from .. import __version__
from .._observe import observing
from .._search_input import (
    MAX_QUERIES,
    MAX_TOP_K,
    NOT_BLANK,
    checked_filter,
    checked_queries,
    checked_score_threshold,
    echoed,
)
from .._tracing import tracing_from_environment
from ..pipeline import Pipeline
from ..rag import DocumentSummary, VectorSearchResult
from ..rag._explain import ExplainedHit
from ._admission import Admission, AdmissionMiddleware, Refused
from ._auth import UI_PATH, BearerTokenMiddleware
from ._guards import (
    MAX_JSON_DEPTH,
    AccessLog,
    Answered,
    BodyLimitMiddleware,
    BodyTooLarge,
    HostOriginMiddleware,
    JSONErrorsMiddleware,
    OutcomeMiddleware,
    error_response,
    parsed_json,
)
from ._mcp import create_mcp_server
from ._metrics import Metrics, metrics_page
from ._refresh import Refresher
from ._service import BadRequest, KnowledgeService, ServiceError, UnsupportedMediaType
from ._settings import ServeOptions
from ._traces import TracingMiddleware
from ._traces import answered as traced_answer
from ._transport import RefusalLog

logger = logging.getLogger("ragflow_config.server")

RETRY_AFTER_SECONDS = "5"
MAX_OFFSET = 10**9  # a documents listing's largest offset (documented in the OpenAPI)


# -- the API's shapes (also its OpenAPI components) --------------------------

Query = Annotated[str, StringConstraints(min_length=1, pattern=NOT_BLANK)]


class SearchRequest(BaseModel):
    """A query (or a few searched together) against one knowledge base."""

    model_config = ConfigDict(extra="forbid")

    query: Query | Annotated[list[Query], Field(min_length=1, max_length=MAX_QUERIES)] = Field(
        description="What to find, in plain words (not blank); or a list of such queries, "
        "searched together: each chunk at its best score over them (as "
        "`KnowledgeBase.search` ranks a list)."
    )
    top_k: StrictInt = Field(
        default=5,
        ge=1,
        le=MAX_TOP_K,
        description="Most hits to return, an integer written without a fraction (2.0 is refused).",
    )
    score_threshold: float | None = Field(
        default=None,
        allow_inf_nan=False,
        strict=True,  # a number, not "0"
        description="Drop hits scoring below this (the store's metric scale); a finite number.",
    )
    filter: dict[str, Any] | None = Field(
        default=None,
        description="Only chunks whose metadata matches every key (nested objects nest); "
        "always within the knowledge base's own metadata_filter, which it can never widen.",
    )
    explain: StrictBool = Field(
        default=False,
        description="Give each hit an `explain`: each side's rank and score, the matched "
        "terms and their weights, the fusion, the reranker and the filter in force.",
    )

    # The CLI, MCP and /ui check with the same functions, so all refuse alike; the
    # server's own bounds come in the validation context (ServeOptions).
    @field_validator("query", mode="before")
    @classmethod
    def _query(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, (str, list)):
            return value
        return checked_queries(value, max_chars=_limits(info).max_query_chars)

    @field_validator("filter", mode="before")
    @classmethod
    def _filter(cls, value: object, info: ValidationInfo) -> object:
        if not isinstance(value, dict):
            return value
        return checked_filter(value, max_keys=_limits(info).max_filter_keys)

    @field_validator("score_threshold", mode="before")
    @classmethod
    def _score_threshold(cls, value: object) -> object:
        return checked_score_threshold(value) if isinstance(value, (int, float)) else value


def _limits(info: ValidationInfo) -> ServeOptions:
    context = info.context or {}
    options = context.get("options")
    return options if isinstance(options, ServeOptions) else ServeOptions()


class SearchResponse(BaseModel):
    """Hits best first, each as `ragflow-config search --json` prints it."""

    knowledge_base: str
    hits: list[ExplainedHit | VectorSearchResult] = Field(
        description="Each with an `explain` when the request asked for one."
    )


class KnowledgeBaseItem(BaseModel):
    name: str
    description: str


_REFRESH = (
    "Its refreshes in the server (serve --refresh-every, --watch, the refresh route): "
    "every_seconds, watching, the one running, the last (when, trigger, result, error, counts, "
    "chunks_written, live_collection, failed_files), last_ok_at and next_at."
)


class KnowledgeBaseDetail(KnowledgeBaseItem):
    refresh: dict[str, Any] = Field(description=_REFRESH)


class RefreshResponse(BaseModel):
    knowledge_base: str
    started: bool = Field(
        description="false when a refresh was already running or asked for: this request joins it"
    )
    refresh: dict[str, Any] = Field(description=_REFRESH)


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
    type: str | None = Field(
        default=None,
        description="With a 503, the library exception it stands for: VectorStoreError, "
        "EmbeddingError or CollectionMismatchError (a RemoteKnowledgeBase raises it).",
    )


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


# -- errors ---------------------------------------------------------------------


async def _on_http_exception(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    path = echoed(request.url.path)
    if exc.status_code == 404:
        return error_response(404, f"no route {request.method} {path}; see /openapi.json")
    if exc.status_code == 405:
        return error_response(405, f"{request.method} is not allowed on {path}")
    return error_response(exc.status_code, str(exc.detail))


async def _on_client_disconnect(request: Request, exc: Exception) -> Response:
    # The client went away mid-request: nothing is wrong here, and no one reads
    # the answer. The access log's line (status 499, as nginx counts it) is all.
    return error_response(499, "the client closed the connection")


async def _on_service_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, ServiceError)
    headers = {"Retry-After": RETRY_AFTER_SECONDS} if exc.status == 503 else None
    return error_response(exc.status, str(exc), headers, kind=exc.kind)


async def _on_body_too_large(request: Request, exc: Exception) -> Response:
    limit = request.app.state.options.max_body_bytes
    return error_response(413, f"the request body is larger than {limit} bytes")


async def _on_unexpected(request: Request, exc: Exception) -> Response:
    logger.error("%s %s failed", request.method, request.url.path, exc_info=exc)
    return error_response(500, "internal error; the server's log has the details")


# -- routes -------------------------------------------------------------------


def _service(request: Request) -> KnowledgeService:
    service: KnowledgeService = request.app.state.service
    return service


async def _json_body(request: Request) -> Any:
    content_type = request.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() != "application/json":
        raise UnsupportedMediaType(
            "the request body must be JSON: send Content-Type: application/json"
        )
    body = await request.body()
    if not body:
        raise BadRequest("the request needs a JSON body")
    try:
        return parsed_json(body)
    except ValueError as exc:
        deep = "recursion limit" in str(exc)
        raise BadRequest(
            f"the request body nests over {MAX_JSON_DEPTH} levels deep"
            if deep
            else "the request body is not valid JSON"
        ) from None


def _validation_message(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors()[:5]:
        where = ".".join(str(part) for part in error["loc"]) or "body"
        message = str(error["msg"]).removeprefix("Value error, ")  # a check of _search_input
        problems.append(f"{where}: {message}")
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
    refresh = _refresher(request).status(info.name)
    return JSONResponse({"name": info.name, "description": info.description, "refresh": refresh})


def _refresher(request: Request) -> Refresher:
    refresher: Refresher = request.app.state.refresher
    return refresher


async def refresh(request: Request) -> Response:
    name = _service(request).info(request.path_params["name"]).name
    refresher = _refresher(request)
    started = refresher.request("request")
    return JSONResponse(
        {"knowledge_base": name, "started": started, "refresh": refresher.status(name)},
        status_code=202,
    )


def _int_param(request: Request, name: str, default: int, low: int, high: int) -> int:
    given = request.query_params.getlist(name)
    if not given:
        return default
    if len(given) > 1:  # which one was meant? (the last would win unseen)
        raise BadRequest(f"{name} is given {len(given)} times; give it once")
    raw = given[0]
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
    offset = _int_param(request, "offset", 0, 0, MAX_OFFSET)
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
        query = SearchRequest.model_validate(payload, context={"options": options})
    except ValidationError as exc:  # _search_input's checks too, as field validators
        raise BadRequest(_validation_message(exc)) from None
    request.state.query = query.query
    hits = await service.search(
        name,
        query.query,
        top_k=query.top_k,
        score_threshold=query.score_threshold,
        where=query.filter,
        explain=query.explain,
    )
    return JSONResponse(
        {"knowledge_base": name, "hits": [hit.model_dump(mode="json") for hit in hits]}
    )


async def no_event_stream(request: Request) -> Response:
    return error_response(
        405, "this MCP server offers no event stream; POST requests to it", {"Allow": "POST"}
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
        KnowledgeBaseDetail,
        RefreshResponse,
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
    # What the guards and the transport may answer on any route, before the route itself.
    every_route = {
        "403": answer(
            "A Host the server does not go by, or an Origin not allowed (DNS rebinding)",
            "ErrorResponse",
        ),
        "408": answer("The request's head or body took too long to arrive", "ErrorResponse"),
        "414": answer(f"A URL over {options.max_request_line_bytes} bytes", "ErrorResponse"),
        "431": answer(
            f"Request headers over {options.max_header_bytes} bytes or "
            f"{options.max_headers} fields",
            "ErrorResponse",
        ),
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
                    "responses": {
                        "200": answer("Alive", "Health"),
                        "401": errors["401"],
                    },
                }
            },
            "/metrics": {
                "get": {
                    "summary": "Prometheus metrics, in the text exposition format",
                    "operationId": "metrics",
                    "responses": {
                        "200": {
                            "description": "The metrics",
                            "content": {"text/plain": {"schema": {"type": "string"}}},
                        },
                        "401": errors["401"],
                    },
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
                        "200": answer("Its name, description and refreshes", "KnowledgeBaseDetail"),
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
                            "schema": {
                                "type": "integer",
                                "minimum": 0,
                                "maximum": MAX_OFFSET,
                                "default": 0,
                            },
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
                        "415": answer("A body not sent as application/json", "ErrorResponse"),
                        **errors,
                    },
                }
            },
            "/v1/knowledge-bases/{name}/refresh": {
                "post": {
                    "summary": "Run the pipeline file again in the server, for its sources' "
                    "changes; idempotent while a refresh runs",
                    "operationId": "refresh",
                    "parameters": [name],
                    "responses": {
                        "202": answer("Started, or joined the one running", "RefreshResponse"),
                        "401": errors["401"],
                        "404": answer("No such knowledge base", "ErrorResponse"),
                    },
                }
            },
        },
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
    }
    for operations in document["paths"].values():
        for operation in operations.values():
            operation["responses"].update(every_route)
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
    service = (
        KnowledgeService(source, knowledge_bases, request_timeout=options.store_timeout_seconds)
        if isinstance(source, Pipeline)
        else source
    )
    refresher = Refresher(
        service.pipeline,
        service.names,
        service.built,
        every=options.refresh_every_seconds,
        watch=options.watch,
    )
    mcp_server = create_mcp_server(service, options, refresher)
    mcp_app = mcp_server.streamable_http_app(
        streamable_http_path=options.mcp_path,
        stateless_http=True,  # read-only, no server-to-client messages: no session to keep
        json_response=True,
        max_request_body_size=options.max_body_bytes,
        # HostOriginMiddleware checks Host and Origin on every route, MCP's too, and
        # answers in JSON; the SDK's own check (plain-text 421/403) would only repeat it.
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        host=options.host,
    )
    routes: list[BaseRoute] = [
        Route("/healthz", health, methods=["GET"]),
        Route("/readyz", ready, methods=["GET"]),
        Route("/openapi.json", openapi, methods=["GET"]),
        Route("/metrics", metrics_page, methods=["GET"]),
        Route("/v1/knowledge-bases", list_knowledge_bases, methods=["GET"]),
        Route("/v1/knowledge-bases/{name}", knowledge_base, methods=["GET"]),
        Route("/v1/knowledge-bases/{name}/documents", documents, methods=["GET"]),
        Route("/v1/knowledge-bases/{name}/search", search, methods=["POST"]),
        Route("/v1/knowledge-bases/{name}/refresh", refresh, methods=["POST"]),
        # The server is stateless and sends nothing unasked, so it offers no event
        # stream: MCP's answer to GET is then 405, and no connection waits on one.
        Route(options.mcp_path, no_event_stream, methods=["GET"]),
        *mcp_app.routes,
    ]
    if options.ui:
        from ._ui import ui_routes  # Jinja2 only when the page is served

        routes += ui_routes()

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            if owned:
                await stack.enter_async_context(service)
            await stack.enter_async_context(refresher)  # closed before the service's stores
            await stack.enter_async_context(mcp_server.session_manager.run())
            stack.enter_context(observing(metrics))
            if tracing is not None:
                stack.callback(tracing.shutdown)  # sends the spans not sent yet
                stack.enter_context(observing(tracing))
            if on_ready is not None:
                result = on_ready()
                if result is not None:
                    await result
            yield

    admission = Admission(options.admission_limits())
    metrics = Metrics(admission)
    refresher.listeners.append(metrics.refreshed)
    tracing = tracing_from_environment()  # None unless the OTEL_* variables ask

    def on_refused(refused: Refused) -> None:
        _admission_refusals.note(refused)
        metrics.refused(refused)

    # Before the guards: every answer is logged, counted and traced, their refusals too.
    answered: list[Answered] = [metrics.answered]
    if options.access_log:
        answered.append(AccessLog(log_queries=options.log_queries))
    middleware = [Middleware(JSONErrorsMiddleware)]
    if tracing is not None:
        middleware.append(Middleware(TracingMiddleware, tracing=tracing))
        answered.append(traced_answer)
    middleware.append(Middleware(OutcomeMiddleware, listeners=answered))
    middleware.append(
        Middleware(
            HostOriginMiddleware, host_names=options.host_names, origins=options.cors_origins
        )
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
        middleware.append(Middleware(BearerTokenMiddleware, token=options.token, ui=options.ui))
    middleware.append(Middleware(BodyLimitMiddleware, limit=options.max_body_bytes))
    # Inside the token check: a client without the token cannot take a place.
    middleware.append(
        Middleware(
            AdmissionMiddleware,
            admission=admission,
            does_work=partial(_does_work, mcp_path=options.mcp_path),
            on_refused=on_refused,
        )
    )
    app = Starlette(
        routes=routes,
        middleware=middleware,
        lifespan=lifespan,
        exception_handlers={
            HTTPException: _on_http_exception,
            ClientDisconnect: _on_client_disconnect,
            ServiceError: _on_service_error,
            BodyTooLarge: _on_body_too_large,
            Exception: _on_unexpected,
        },
    )
    # A redirect to the path with or without its slash would be built from the Host header.
    app.router.redirect_slashes = False
    app.state.service = service
    app.state.refresher = refresher
    app.state.options = options
    app.state.admission = admission
    app.state.metrics = metrics
    return app


def _does_work(scope: Scope, *, mcp_path: str) -> bool:
    """Whether a request may do store or model work, and so waits for a place (``_admission``)."""
    path: str = scope["path"]
    if path == mcp_path:
        return bool(scope["method"] == "POST")
    if path == UI_PATH or path.startswith(f"{UI_PATH}/"):
        return not path.startswith(f"{UI_PATH}/static/")
    # /v1/knowledge-bases/{name}/search and .../documents; not the names nor one base's
    return path.startswith("/v1/knowledge-bases/") and path.count("/") >= 4


_admission_refusals = RefusalLog("refused a request")
