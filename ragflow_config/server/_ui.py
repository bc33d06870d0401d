"""The retrieval-testing page, ``serve --ui`` at ``/ui``: search, explain and browse.

Server-rendered HTML (Jinja2 templates in ``ui/templates``) that works with
JavaScript off: the search is a plain GET form, every view a link. With
JavaScript on, htmx (``ui/static/htmx.min.js``, version 2.0.11 from the npm
package ``htmx.org``, 0BSD, committed as released: no CDN and no build step)
swaps the results and a document's chunks into the page instead of loading
a new one.

The page sits behind the same guards as the API (Host and Origin checks,
the bearer token). A browser cannot send the bearer token on a link, so with
a token set, ``/ui/login`` takes it once in a form and answers with a
session cookie (``_auth.ui_session``): HttpOnly, so no script reads it,
``SameSite=Strict``, so no other site's page sends it, and valid under
``/ui`` only, so it opens no JSON API or MCP route. The cookie holds a
digest of the token, not the token.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Sequence
from typing import Any, Literal
from urllib.parse import parse_qs, quote

from jinja2 import Environment, PackageLoader
from markupsafe import Markup, escape
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from .._search_input import SearchInputError, checked_query, checked_top_k
from ..message import TextBlock
from ..rag._analyzer import Analyzer
from ..rag._explain import ExplainedHit
from ._auth import UI_COOKIE, UI_PATH, ui_session
from ._service import KnowledgeService, NotFound, ServiceError

MODES = ("dense", "lexical", "hybrid")
CHUNKS_PER_PAGE = 50

_templates = Environment(
    loader=PackageLoader("ragflow_config.server", "ui/templates"),
    autoescape=True,
    trim_blocks=True,
    lstrip_blocks=True,
)
# A path segment: a document id or a knowledge base's name, whatever it holds.
_templates.filters["segment"] = lambda value: quote(str(value), safe="")
# Script, style and requests from this server only; no frame, no plug-in. htmx's own
# indicator style is turned off in the page's htmx-config, so no inline style is needed.
_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; "
    "img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    # Queries ride in the URL: never sent to another site. (no-referrer would make a
    # browser send "Origin: null" with the sign-in form, which the Origin check refuses.)
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}


def ui_routes() -> list[BaseRoute]:
    """The page's routes, mounted at ``/ui``."""
    return [
        Mount(
            UI_PATH,
            routes=[
                Route("/", index, methods=["GET"]),
                Route("/login", login_form, methods=["GET"]),
                Route("/login", login, methods=["POST"]),
                Route("/logout", logout, methods=["POST"]),
                Route("/kb/{name}", knowledge_base, methods=["GET"]),
                Route("/kb/{name}/documents", documents, methods=["GET"]),
                Route("/kb/{name}/documents/{document_id}", document, methods=["GET"]),
                Mount(
                    "/static",
                    StaticFiles(packages=[("ragflow_config.server", "ui/static")]),
                    name="static",
                ),
            ],
        )
    ]


def _page(request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
    html = _templates.get_template(template).render(
        ui=UI_PATH,
        signed_in=_signed_in(request),
        refresh=request.app.state.refresher.status,  # a knowledge base's refreshes, by name
        **context,
    )
    return HTMLResponse(html, code, headers=_HEADERS)


def _signed_in(request: Request) -> bool:
    """Whether the page shows a sign-out button: a token is set and the cookie carries it."""
    return request.app.state.options.token is not None and UI_COOKIE in request.cookies


def _service(request: Request) -> KnowledgeService:
    service: KnowledgeService = request.app.state.service
    return service


def _partial(request: Request) -> bool:
    """Whether htmx asked for a fragment of the page rather than the page."""
    return request.headers.get("hx-request") == "true"


def _error(request: Request, exc: ServiceError, code: int) -> HTMLResponse:
    return _page(request, "error.html", code, message=str(exc))


async def index(request: Request) -> Response:
    service = _service(request)
    try:
        statuses = [await service.status(info.name) for info in service.infos]
    except ServiceError as exc:
        return _error(request, exc, 503)
    return _page(request, "index.html", statuses=statuses, modes=MODES)


async def knowledge_base(request: Request) -> Response:
    service = _service(request)
    name = request.path_params["name"]
    try:
        status = await service.status(name)
    except NotFound as exc:
        return _error(request, exc, 404)
    except ServiceError as exc:
        return _error(request, exc, 503)
    params = request.query_params
    raw_query = params.get("q", "")
    mode = params.get("mode") or status.mode
    form = {"q": raw_query, "mode": mode, "top_k": params.get("top_k", "5")}
    problem, hits = None, None
    if raw_query:
        try:
            query = checked_query(
                raw_query, name="q", max_chars=request.app.state.options.max_query_chars
            )
            top_k = checked_top_k(_integer(form["top_k"]), name="top_k")
            if mode not in MODES:
                raise SearchInputError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
            chosen: Literal["dense", "lexical", "hybrid"] = mode  # type: ignore[assignment]
            found = await service.search(name, query, top_k=top_k, explain=True, mode=chosen)
            hits = [_hit(hit) for hit in found if isinstance(hit, ExplainedHit)]
            if _lexical(hits):  # highlight as the knowledge base analyses
                kb = await service.knowledge_base(name)
                _highlight(hits, Analyzer(kb.retrieval.analyzer))
        except SearchInputError as exc:
            problem = str(exc)
        except ServiceError as exc:
            problem = str(exc)
    context: dict[str, Any] = {
        "status": status,
        "form": form,
        "modes": MODES,
        "hits": hits,
        "problem": problem,
    }
    if _partial(request):
        return _page(request, "_results.html", **context)
    return _page(request, "knowledge_base.html", **context)


async def documents(request: Request) -> Response:
    service = _service(request)
    name = request.path_params["name"]
    try:
        status = await service.status(name)
        listed = await service.list_documents(name)
    except NotFound as exc:
        return _error(request, exc, 404)
    except ServiceError as exc:
        return _error(request, exc, 503)
    return _page(request, "documents.html", status=status, documents=listed)


async def document(request: Request) -> Response:
    service = _service(request)
    name, document_id = request.path_params["name"], request.path_params["document_id"]
    offset = max(_integer(request.query_params.get("offset", "0")), 0)
    try:
        status = await service.status(name)
        chunks = await service.list_chunks(
            name, document_id, offset=offset, limit=CHUNKS_PER_PAGE + 1
        )
    except NotFound as exc:
        return _error(request, exc, 404)
    except ServiceError as exc:
        return _error(request, exc, 503)
    if not chunks and offset == 0:
        return _error(request, NotFound(f"{name} has no document {document_id!r}"), 404)
    context: dict[str, Any] = {
        "status": status,
        "document_id": document_id,
        "chunks": [_chunk(chunk) for chunk in chunks[:CHUNKS_PER_PAGE]],
        "offset": offset,
        "more": len(chunks) > CHUNKS_PER_PAGE,
        "per_page": CHUNKS_PER_PAGE,
    }
    if _partial(request):
        return _page(request, "_chunks.html", **context)
    return _page(request, "document.html", **context)


# -- signing in with the token ------------------------------------------------


async def login_form(request: Request) -> Response:
    return _page(request, "login.html", problem=None, token_set=_token(request) is not None)


async def login(request: Request) -> Response:
    token = _token(request)
    if token is None:  # nothing to sign in to
        return RedirectResponse(f"{UI_PATH}/", 303)
    body = (await request.body()).decode("utf-8", "replace")
    offered = parse_qs(body).get("token", [""])[0].strip()
    if not hmac.compare_digest(offered.encode(), token.encode()):
        return _page(request, "login.html", 401, problem="wrong token", token_set=True)
    response = RedirectResponse(f"{UI_PATH}/", 303)
    response.set_cookie(
        UI_COOKIE,
        ui_session(token),
        path=UI_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )
    return response


async def logout(request: Request) -> Response:
    response = RedirectResponse(f"{UI_PATH}/login", 303)
    response.delete_cookie(UI_COOKIE, path=UI_PATH, httponly=True, samesite="strict")
    return response


def _token(request: Request) -> str | None:
    secret = request.app.state.options.token
    return None if secret is None else str(secret.get_secret_value())


# -- what the templates show ----------------------------------------------------


def _integer(text: str) -> Any:
    """``text`` as an int when it is one, else as it is (the check then names it)."""
    return int(text) if re.fullmatch(r"-?\d{1,9}", text.strip()) else text


def _text(content: Any) -> str:
    return content.text if isinstance(content, TextBlock) else f"<{content.media_type} data>"


def _hit(hit: ExplainedHit) -> dict[str, Any]:
    return {
        "score": hit.score,
        "document_id": hit.document_id,
        "source": hit.chunk.source,
        "chunk_index": hit.chunk.chunk_index,
        "total_chunks": hit.chunk.total_chunks,
        "metadata": hit.chunk.metadata,
        "text": _text(hit.chunk.content),
        "html": escape(_text(hit.chunk.content)),
        "explain": hit.explain,
        "why": hit.explain.summary(),
    }


def _lexical(hits: Sequence[dict[str, Any]]) -> bool:
    return any(hit["explain"].lexical is not None for hit in hits)


def _highlight(hits: list[dict[str, Any]], analyzer: Analyzer) -> None:
    """Each hit's text as HTML, the words whose analysed term matched in ``<mark>``."""
    for hit in hits:
        lexical = hit["explain"].lexical
        matched = {match.term for match in lexical.terms} if lexical else set()
        hit["html"] = _marked(hit["text"], analyzer, matched)


def _marked(text: str, analyzer: Analyzer, matched: set[str]) -> Markup:
    parts: list[str] = []
    last = 0
    for start, end, term in analyzer.spans(text):
        if term in matched:
            parts += [str(escape(text[last:start])), f"<mark>{escape(text[start:end])}</mark>"]
            last = end
    parts.append(str(escape(text[last:])))
    return Markup("".join(parts))


def _chunk(chunk: Any) -> dict[str, Any]:
    return {
        "chunk_index": chunk.chunk_index,
        "total_chunks": chunk.total_chunks,
        "source": chunk.source,
        "metadata": chunk.metadata,
        "text": _text(chunk.content),
    }
