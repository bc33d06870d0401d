"""The bearer token check, in front of every HTTP route (the JSON API and MCP alike)."""

from __future__ import annotations

import hmac

from pydantic import SecretStr
from starlette.types import ASGIApp, Receive, Scope, Send

from ._guards import send_error


class BearerTokenMiddleware:
    """Refuses, with 401, any HTTP request without ``Authorization: Bearer <token>``.

    The comparison takes the same time whatever the token sent, and neither
    the expected nor the offered token is ever logged or echoed.
    """

    def __init__(self, app: ASGIApp, token: SecretStr) -> None:
        self.app = app
        self._expected = token.get_secret_value().encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        offered = b""
        for name, value in scope.get("headers", ()):
            if name == b"authorization":
                offered = value
                break
        # RFC 7235: the scheme is case-insensitive ("bearer" as well as "Bearer").
        scheme, _, credentials = offered.partition(b" ")
        if scheme.lower() == b"bearer" and hmac.compare_digest(credentials.strip(), self._expected):
            await self.app(scope, receive, send)
            return
        scope.setdefault("state", {})["refused"] = True
        message = (
            "missing bearer token: send 'Authorization: Bearer <token>'"
            if not offered
            else "invalid bearer token"
        )
        await send_error(
            send, 401, message, [(b"www-authenticate", b'Bearer realm="ragflow-config"')]
        )
