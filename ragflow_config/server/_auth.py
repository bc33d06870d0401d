"""The bearer token check, in front of every HTTP route (the JSON API and MCP alike).

The retrieval-testing page (``_ui``, at :data:`UI_PATH`) takes the token
once at ``/ui/login`` and is then sent a session cookie, which this check
accepts under ``/ui`` only.
"""

from __future__ import annotations

import hashlib
import hmac

from pydantic import SecretStr
from starlette.types import ASGIApp, Receive, Scope, Send

from ._guards import send_error

UI_PATH = "/ui"
UI_COOKIE = "ragflow_ui"
# What the page serves before signing in: the sign-in form and its script and style.
_UI_OPEN = (f"{UI_PATH}/login", f"{UI_PATH}/static/")


def ui_session(token: str) -> str:
    """The page's session cookie for ``token``: a keyed digest, so the cookie never holds
    the token, and a new token ends every session."""
    return hmac.new(token.encode(), b"ragflow-config ui session", hashlib.sha256).hexdigest()


class BearerTokenMiddleware:
    """Refuses, with 401, any HTTP request without ``Authorization: Bearer <token>``.

    The comparison takes the same time whatever the token sent, and neither
    the expected nor the offered token is ever logged or echoed. With
    ``ui``, a request under :data:`UI_PATH` may carry the page's session
    cookie instead; one with neither is sent to the sign-in form.
    """

    def __init__(self, app: ASGIApp, token: SecretStr, *, ui: bool = False) -> None:
        self.app = app
        self._expected = token.get_secret_value().encode()
        self._session = ui_session(token.get_secret_value()).encode() if ui else None

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
        path = scope.get("path", "")
        if self._session is not None and (path == UI_PATH or path.startswith(f"{UI_PATH}/")):
            if path.startswith(_UI_OPEN) or hmac.compare_digest(self._cookie(scope), self._session):
                await self.app(scope, receive, send)
                return
            if scope["method"] in ("GET", "HEAD"):  # a browser: to the sign-in form
                location = f"{UI_PATH}/login".encode()
                await send(
                    {
                        "type": "http.response.start",
                        "status": 303,
                        "headers": [(b"location", location), (b"content-length", b"0")],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        message = (
            "missing bearer token: send 'Authorization: Bearer <token>'"
            if not offered
            else "invalid bearer token"
        )
        await send_error(
            send, 401, message, [(b"www-authenticate", b'Bearer realm="ragflow-config"')]
        )

    @staticmethod
    def _cookie(scope: Scope) -> bytes:
        """The page's session cookie, or nothing."""
        for name, value in scope.get("headers", ()):
            if name == b"cookie":
                for part in value.split(b";"):
                    key, _, found = part.strip().partition(b"=")
                    if key == UI_COOKIE.encode():
                        return bytes(found)
        return b"\0"  # never a digest
