"""Serving a pipeline's knowledge bases, read-only, over MCP and a small HTTP JSON API.

Needs the ``serve`` extra (``pip install 'ragflow-config[serve]'``).

>>> from ragflow_config.server import serve
>>> serve("pipelines/local.yaml")                  # HTTP on 127.0.0.1:8765: /v1/..., /mcp
>>> serve("pipelines/local.yaml", stdio=True)      # MCP over stdin/stdout, for desktop clients

``create_app(pipeline)`` returns the ASGI application for another server
(``uvicorn module:app``); ``KnowledgeService`` is what both front ends use.
"""

from __future__ import annotations

from .._extras import require

require("mcp", "serve")
require("starlette", "serve")
require("uvicorn", "serve")

from ._app import create_app, openapi_document  # noqa: E402
from ._mcp import create_mcp_server  # noqa: E402
from ._serve import serve, serve_http, serve_stdio  # noqa: E402
from ._service import (  # noqa: E402
    BadRequest,
    KnowledgeService,
    NotFound,
    ServiceError,
    Unavailable,
    tool_middleware_index,
)
from ._settings import DEFAULT_TOKEN_VARIABLE, ServeCredential, ServeOptions, read_token  # noqa: E402

__all__ = [
    "DEFAULT_TOKEN_VARIABLE",
    "BadRequest",
    "KnowledgeService",
    "NotFound",
    "ServeCredential",
    "ServeOptions",
    "ServiceError",
    "Unavailable",
    "create_app",
    "create_mcp_server",
    "openapi_document",
    "read_token",
    "serve",
    "serve_http",
    "serve_stdio",
    "tool_middleware_index",
]
