"""What the server is told: the bearer token (from the environment only) and its limits."""

from __future__ import annotations

import ipaddress
import os

from pydantic import BaseModel, ConfigDict, Field, SecretStr
from pydantic_settings import SettingsConfigDict

from .._errors import RagflowError
from ..credential._base import CredentialBase
from ._admission import AdmissionLimits
from ._transport import TransportLimits

DEFAULT_TOKEN_VARIABLE = "RAGFLOW_SERVE_TOKEN"
MIN_TOKEN_LENGTH = 16
WILDCARD_ADDRESSES = frozenset({"0.0.0.0", "::", ""})
# Connections accepted in one go when the listening socket is ready (uvicorn's
# backlog): accepted before the cap closes them, so they need files too.
ACCEPT_BURST = 64
# Files a server may open besides its connections and the files it holds at start
# (the listening socket, logs, the stores' files and sockets, the model): those a
# store or model opens later, and one burst of accepts.
RESERVED_FILES = 64 + ACCEPT_BURST


class ServeCredential(CredentialBase):
    """The bearer token clients must send; ``RAGFLOW_SERVE_TOKEN``. Optional.

    Read from the environment only: a pipeline file never holds it, and no
    log line, error or ``repr`` shows it.
    """

    model_config = SettingsConfigDict(env_prefix="RAGFLOW_SERVE_", extra="ignore", frozen=True)
    token: SecretStr | None = None


class TokenError(RagflowError):
    """The token in the environment is unusable (too short, or blank)."""


def read_token(variable: str = DEFAULT_TOKEN_VARIABLE) -> SecretStr | None:
    """The token held by ``variable``, or ``None`` when it is unset or empty."""
    raw = os.environ.get(variable)
    if not raw:
        return None
    token = ServeCredential(token=raw).token
    assert token is not None
    value = token.get_secret_value()
    if value != value.strip() or len(value) < MIN_TOKEN_LENGTH:
        raise TokenError(
            f"${variable} must be at least {MIN_TOKEN_LENGTH} characters with no surrounding "
            "whitespace; make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
        )
    return token


class ServeOptions(BaseModel):
    """Limits and switches of a server. Every bound has a default that fits a search service."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    host: str = Field(default="127.0.0.1", description="Address to bind; loopback by default.")
    port: int = Field(default=8765, ge=0, le=65535, description="Port to bind; 0 picks a free one.")
    token: SecretStr | None = Field(
        default=None, description="Bearer token every HTTP request must carry; None: none needed."
    )
    metrics_port: int | None = Field(
        default=None,
        ge=0,
        le=65535,
        description="Also serve GET /metrics, without the token, on this port of 127.0.0.1 "
        "alone (0 picks a free one); None: only behind the token on the main port.",
    )
    max_body_bytes: int = Field(
        default=64 * 1024, ge=1024, description="Largest request body accepted (413 beyond)."
    )
    max_query_chars: int = Field(
        default=2000, ge=1, description="Longest query accepted, in characters (400 beyond)."
    )
    max_filter_keys: int = Field(
        default=16, ge=1, description="Most key paths a client filter may name (400 beyond)."
    )
    max_list_limit: int = Field(
        default=1000, ge=1, description="Most documents one listing page returns."
    )
    drain_seconds: float = Field(
        default=30.0,
        ge=0,
        description="On SIGTERM, how long in-flight requests may finish before they are cut.",
    )
    access_log: bool = Field(default=True, description="One log line per request.")
    ui: bool = Field(
        default=False, description="Serve the retrieval-testing page at /ui (`serve --ui`)."
    )
    refresh_every_seconds: float | None = Field(
        default=None,
        gt=0,
        description="Run the pipeline file again in the server this often, the first time at "
        "start (`serve --refresh-every`); None: only when asked.",
    )
    watch: bool = Field(
        default=False,
        description="Run the pipeline file again in the server when a file of a local source, "
        "or the pipeline file, changes (`serve --watch`).",
    )
    log_queries: bool = Field(
        default=False, description="Also log the text of each query (off: queries may be private)."
    )
    mcp_path: str = Field(default="/mcp", description="Where MCP over streamable HTTP is served.")
    cors_origins: tuple[str, ...] = Field(
        default=(),
        description="Browser origins (https://app.example.com) whose pages may call the server; "
        "none by default.",
    )
    allowed_hosts: tuple[str, ...] = Field(
        default=(),
        description="Host names clients may address the server by (the Host header), besides "
        "the bound address and localhost; any other is refused 403 (DNS rebinding).",
    )
    store_timeout_seconds: float = Field(
        default=10.0,
        gt=0,
        description="Deadline of the store and model calls under one request, retries included "
        "(503 beyond).",
    )
    max_searches_per_client: int = Field(
        default=4,
        ge=1,
        description="Requests doing store or model work (searches, listings, MCP, /ui) one "
        "client address may have running or waiting at once (429 beyond).",
    )
    max_searches: int = Field(
        default=8, ge=1, description="Such requests running at once; the next ones wait."
    )
    max_queued_searches: int = Field(
        default=64,
        ge=0,
        description="Such requests waiting at most, each for at most store_timeout_seconds "
        "(429 beyond).",
    )
    max_connections: int = Field(
        default=1000,
        ge=1,
        description="Open connections at most; the next is answered 503 and closed (lowered to "
        "fit the process's open-file limit).",
    )
    max_request_line_bytes: int = Field(
        default=8 * 1024, ge=256, description="Longest URL accepted, in bytes (414 beyond)."
    )
    max_header_bytes: int = Field(
        default=32 * 1024,
        ge=1024,
        description="Largest request head (request line and header fields), in bytes (431 beyond).",
    )
    max_headers: int = Field(
        default=100, ge=8, description="Most header fields in one request (431 beyond)."
    )
    idle_seconds: float = Field(
        default=5.0,
        gt=0,
        description="How long a connection may wait before (or between) requests before it is "
        "closed; the keep-alive time.",
    )
    header_seconds: float = Field(
        default=10.0,
        gt=0,
        description="How long a request's head may take to arrive, from its first byte (408).",
    )
    body_seconds: float = Field(
        default=30.0,
        gt=0,
        description="How long a request's body may take to arrive, after its head (408).",
    )

    @property
    def loopback(self) -> bool:
        """Whether ``host`` reaches this machine only."""
        if self.host == "localhost":
            return True
        try:
            return ipaddress.ip_address(self.host).is_loopback
        except ValueError:
            return False

    @property
    def every_address(self) -> bool:
        """Whether ``host`` is a wildcard (0.0.0.0, ::): every address of the machine."""
        return self.host in WILDCARD_ADDRESSES

    @property
    def host_names(self) -> frozenset[str]:
        """The names a Host header may carry: the bound address, localhost and ``allowed_hosts``.

        A wildcard address (0.0.0.0, ::) is no name a client sends: behind one,
        the names the server is reached by go in ``allowed_hosts``.
        """
        names = {"localhost", *(host.lower().rstrip(".") for host in self.allowed_hosts)}
        if not self.every_address:
            names.add(self.host.lower())
        return frozenset(names)

    def transport_limits(
        self, open_file_limit: int | None = None, open_files: int = 0
    ) -> TransportLimits:
        """The transport's bounds; ``max_connections`` lowered to leave room under the
        process's open-file limit for the ``open_files`` it holds already (stores, model,
        logs, the listening socket) and :data:`RESERVED_FILES` more."""
        connections = self.max_connections
        if open_file_limit is not None:
            room = open_file_limit - open_files - RESERVED_FILES
            connections = max(1, min(connections, room))
        return TransportLimits(
            max_connections=connections,
            max_request_line_bytes=self.max_request_line_bytes,
            max_header_bytes=self.max_header_bytes,
            max_headers=self.max_headers,
            idle_seconds=self.idle_seconds,
            header_seconds=self.header_seconds,
            body_seconds=self.body_seconds,
        )

    def admission_limits(self) -> AdmissionLimits:
        """The bounds of :class:`~._admission.Admission`: a queued request waits at most
        a request's deadline."""
        return AdmissionLimits(
            per_client=self.max_searches_per_client,
            running=self.max_searches,
            queued=self.max_queued_searches,
            wait_seconds=self.store_timeout_seconds,
        )
