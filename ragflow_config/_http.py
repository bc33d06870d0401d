"""JSON-over-HTTP calls to model servers, with bounded retries of transient failures.

Errors name the service, the HTTP status and the server's own message; they
never carry request headers, so an API key cannot leak into a message or a log.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from types import TracebackType
from typing import Any, Protocol, TypeVar

import httpx
from pydantic import Field, SecretStr, ValidationError, field_validator

from ._component import ComponentParameters
from ._errors import RagflowError
from ._redact import redact_url, redact_urls
from .credential import DashScopeCredential, GeminiCredential, OpenAICredential

# Credentials that hold one bearer key for an OpenAI-compatible server.
ApiKeyCredential = OpenAICredential | DashScopeCredential | GeminiCredential

logger = logging.getLogger("ragflow_config.http")

_MAX_RETRY_AFTER = 30.0
_EXCERPT_CHARS = 300
# Transport errors that another attempt cannot fix: the request itself is wrong.
_PERMANENT_TRANSPORT_ERRORS = (httpx.UnsupportedProtocol, httpx.LocalProtocolError)


async def post_json(
    client: httpx.AsyncClient,
    url: str,
    payload: dict[str, Any],
    *,
    service: str,
    error: type[RagflowError],
    headers: dict[str, str] | None = None,
    max_retries: int = 3,
    backoff: float = 0.5,
) -> Any:
    """POST ``payload`` as JSON and return the decoded JSON response body.

    429, 5xx and transport errors (timeouts included) are retried up to
    ``max_retries`` times, waiting ``backoff`` seconds doubled per attempt and
    jittered, or the server's ``Retry-After`` seconds (at most 30). Any other
    failure, or the last one, raises ``error`` naming ``service``.
    """
    secrets = [value for value in (headers or {}).values() if len(value) >= 8]
    attempts = max_retries + 1
    for attempt in range(1, attempts + 1):
        retry_after: float | None = None
        try:
            response = await client.post(url, json=payload, headers=headers)
        except (httpx.InvalidURL, *_PERMANENT_TRANSPORT_ERRORS) as exc:
            raise error(f"{service}: {type(exc).__name__}: {_redact(str(exc), secrets)}") from exc
        except httpx.TransportError as exc:
            problem = f"{type(exc).__name__}: {_redact(str(exc), secrets)}".rstrip(": ")
        else:
            if response.is_success:
                return _decode(response, service, error, secrets)
            problem = f"HTTP {response.status_code}: {_excerpt(response, secrets)}"
            if not _is_transient(response.status_code):
                raise error(f"{service}: {problem}")
            retry_after = _retry_after(response)
        if attempt == attempts:
            raise error(f"{service}: {problem} (gave up after {attempts} attempts)")
        delay = (
            retry_after
            if retry_after is not None
            else backoff * 2 ** (attempt - 1) * (0.5 + random.random())
        )
        logger.warning(
            "%s: %s; retrying in %.1fs (attempt %d of %d)",
            service,
            problem,
            delay,
            attempt,
            attempts,
        )
        await asyncio.sleep(delay)
    raise AssertionError("unreachable")


def unexpected_response(service: str, exc: ValidationError) -> str:
    """What a response that does not have the expected shape gets wrong: its first problem, by path."""
    problem = exc.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    return f"{service}: unexpected response: {where}: {problem['msg']}"


def _is_transient(status: int) -> bool:
    return status == 429 or status >= 500


def _retry_after(response: httpx.Response) -> float | None:
    """The server's ``Retry-After`` in seconds, capped; ``None`` if absent or an HTTP date."""
    try:
        seconds = float(response.headers.get("retry-after", ""))
    except ValueError:
        return None
    return min(max(seconds, 0.0), _MAX_RETRY_AFTER)


def _decode(
    response: httpx.Response, service: str, error: type[RagflowError], secrets: list[str]
) -> Any:
    try:
        return response.json()
    except ValueError:
        raise error(
            f"{service}: HTTP {response.status_code} with a body that is not JSON: "
            f"{_excerpt(response, secrets)}"
        ) from None


def _excerpt(response: httpx.Response, secrets: list[str]) -> str:
    """The server's error message if the body has a usual shape, else the body's start."""
    try:
        body = response.json()
    except ValueError:
        body = None
    candidates: list[Any] = []
    if isinstance(body, dict):
        inner = body.get("error")
        nested = inner.get("message") if isinstance(inner, dict) else inner
        candidates = [nested, body.get("message"), body.get("detail")]
    message = next((c for c in candidates if isinstance(c, str) and c.strip()), None)
    text = message if message is not None else response.text
    text = " ".join(text.split()) or "(empty body)"
    if len(text) > _EXCERPT_CHARS:
        text = text[:_EXCERPT_CHARS] + "..."
    return _redact(text, secrets)


def _redact(text: str, secrets: list[str]) -> str:
    """Hide any header value a server echoed back (some echo the API key they rejected),
    and the credentials of any URL quoted (a transport error may quote the request's)."""
    for secret in secrets:
        text = text.replace(secret, "***")
        # "Bearer sk-..." is sent; the key alone is what a server would echo.
        _, _, token = secret.partition(" ")
        if len(token) >= 8:
            text = text.replace(token, "***")
    return redact_urls(text)


class EndpointParameters(ComponentParameters):
    """Where an OpenAI-compatible model lives and how to reach it."""

    base_url: str = Field(
        default="https://api.openai.com/v1",
        pattern=r"^https?://",
        description="The API root (OpenAI, DashScope compatible mode, vLLM, Ollama's /v1, ...).",
    )
    model: str = Field(min_length=1, description="The model's name on the server.")
    timeout: float = Field(default=60.0, gt=0, description="Seconds per request.")
    max_retries: int = Field(
        default=3, ge=0, description="Retries of a request after 429, 5xx or a network error."
    )
    api_key_env: str = Field(
        default="OPENAI_API_KEY",
        description="Environment variable holding the API key, if the server needs one.",
    )

    @field_validator("base_url")
    @classmethod
    def _no_trailing_slash(cls, value: str) -> str:
        return value.rstrip("/")


# Public APIs that refuse every request without a key; local servers need none.
_HOSTS_THAT_NEED_A_KEY = frozenset(
    {
        "api.openai.com",
        "dashscope.aliyuncs.com",
        "dashscope-intl.aliyuncs.com",
        "generativelanguage.googleapis.com",
        "api.cohere.com",
        "api.jina.ai",
    }
)


class OpenAIEndpoint:
    """An OpenAI-compatible HTTP API: a base URL, an optional bearer key, one client per loop.

    Shared by the embedding and chat models so both name the remote, send the
    key and manage their connections the same way.
    """

    def __init__(
        self,
        base_url: str,
        api_key: SecretStr | None,
        timeout: float,
        label: str,
        api_key_env: str = "OPENAI_API_KEY",
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self._api_key_env = api_key_env
        self._timeout = timeout
        self._label = label
        self._client: httpx.AsyncClient | None = None
        self._client_loop: asyncio.AbstractEventLoop | None = None

    @classmethod
    def for_model(
        cls,
        parameters: EndpointParameters,
        credential: ApiKeyCredential | None,
        credential_type: type[ApiKeyCredential],
        label: str,
    ) -> OpenAIEndpoint:
        """The endpoint a model's parameters name; the key from ``credential`` or the environment."""
        credential = credential or credential_type.from_environment(
            {"api_key": parameters.api_key_env}
        )
        return cls(
            parameters.base_url,
            credential.api_key,
            parameters.timeout,
            f"{label} ({parameters.model})",
            parameters.api_key_env,
        )

    @property
    def service(self) -> str:
        """How errors and logs name the remote: never with credentials in the URL."""
        return f"{self._label} at {redact_url(self.base_url)}"

    async def post(
        self, path: str, payload: dict[str, Any], *, error: type[RagflowError], max_retries: int
    ) -> Any:
        if self._api_key is None and httpx.URL(self.base_url).host in _HOSTS_THAT_NEED_A_KEY:
            # Known without a request: no retries, no network, and the variable named.
            raise error(
                f"{self.service}: no API key; set the environment variable {self._api_key_env}"
            )
        headers = (
            {"Authorization": f"Bearer {self._api_key.get_secret_value()}"}
            if self._api_key is not None
            else None
        )
        try:
            return await post_json(
                self._http_client(),
                f"{self.base_url}/{path}",
                payload,
                service=self.service,
                error=error,
                headers=headers,
                max_retries=max_retries,
            )
        except RagflowError as exc:
            if self._api_key is None and re.search(r": HTTP 40[13]\b", str(exc)):
                raise error(
                    f"{exc}; no API key was sent: set the environment variable {self._api_key_env}"
                ) from exc
            raise

    def _http_client(self) -> httpx.AsyncClient:
        # A client's connections belong to the event loop that opened them, so an
        # endpoint reused under a new loop (a second ``asyncio.run``) needs a new client.
        loop = asyncio.get_running_loop()
        if self._client is None or self._client_loop is not loop:
            self._client = httpx.AsyncClient(timeout=self._timeout)
            self._client_loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one."""
        client, self._client = self._client, None
        # A client opened under another, finished loop cannot be closed from this one.
        if client is not None and self._client_loop is asyncio.get_running_loop():
            await client.aclose()


class _Closable(Protocol):
    async def aclose(self) -> None: ...


_Owner = TypeVar("_Owner", bound="EndpointOwner")


class EndpointOwner:
    """A model or reranker whose requests go through ``self._endpoint``: ``aclose()`` and
    ``async with`` close that endpoint's HTTP client."""

    _endpoint: _Closable

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one."""
        await self._endpoint.aclose()

    async def __aenter__(self: _Owner) -> _Owner:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
