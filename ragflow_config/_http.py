"""JSON-over-HTTP calls to model servers, with bounded retries of transient failures.

Errors name the service, the HTTP status and the server's own message; they
never carry request headers, so an API key cannot leak into a message or a log.
"""

from __future__ import annotations

import asyncio
import logging
import random
import re
from collections.abc import Awaitable, Callable, Mapping
from types import TracebackType
from typing import Any, ClassVar, Generic, Protocol, TypeVar

import httpx
from pydantic import Field, SecretStr, ValidationError, field_validator

from ._component import ComponentParameters
from ._errors import RagflowError
from ._redact import redact_url, redact_urls
from .credential import DashScopeCredential, GeminiCredential, OpenAICredential

# Credentials that hold one bearer key for an OpenAI-compatible server.
ApiKeyCredential = OpenAICredential | DashScopeCredential | GeminiCredential

logger = logging.getLogger("ragflow_config.http")
T = TypeVar("T")
C = TypeVar("C")

_MAX_RETRY_AFTER = 30.0
_EXCERPT_CHARS = 300
# Transport errors that another attempt cannot fix: the request itself is wrong.
_PERMANENT_TRANSPORT_ERRORS = (httpx.UnsupportedProtocol, httpx.LocalProtocolError)


class Transient(Exception):
    """A failure another attempt may not meet (429, 5xx, network, timeout), worded for the user."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.retry_after = retry_after


async def with_retries(
    attempt: Callable[[], Awaitable[T]],
    *,
    service: str,
    error: Callable[[str], Exception],
    max_retries: int,
    backoff: float = 0.5,
) -> T:
    """``attempt()``, again while it raises :class:`Transient`, at most ``max_retries`` times.

    Between attempts it waits ``backoff`` seconds doubled per attempt and
    jittered, or the server's ``Retry-After``. The last failure raises
    ``error`` (an exception class, or a function making one from the message)
    naming ``service``; any other exception passes through at once.
    """
    attempts = max_retries + 1
    for number in range(1, attempts + 1):
        try:
            return await attempt()
        except Transient as exc:
            if number == attempts:
                raise error(
                    f"{service}: {exc.problem} (gave up after {attempts} attempts)"
                ) from None
            delay = (
                exc.retry_after
                if exc.retry_after is not None
                else backoff * 2 ** (number - 1) * (0.5 + random.random())
            )
            logger.warning(
                "%s: %s; retrying in %.1fs (attempt %d of %d)",
                service,
                exc.problem,
                delay,
                number,
                attempts,
            )
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")


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

    429, 5xx and transport errors (timeouts included) are retried (see
    :func:`with_retries`); any other failure raises ``error`` naming ``service``.
    """
    secrets = [value for value in (headers or {}).values() if len(value) >= 8]

    async def attempt() -> Any:
        try:
            response = await client.post(url, json=payload, headers=headers)
        except (httpx.InvalidURL, *_PERMANENT_TRANSPORT_ERRORS) as exc:
            raise error(f"{service}: {type(exc).__name__}: {redact(str(exc), secrets)}") from exc
        except httpx.TransportError as exc:
            raise Transient(
                f"{type(exc).__name__}: {redact(str(exc), secrets)}".rstrip(": ")
            ) from None
        if response.is_success:
            return _decode(response, service, error, secrets)
        problem = f"HTTP {response.status_code}: {_excerpt(response, secrets)}"
        if not is_transient(response.status_code):
            raise error(f"{service}: {problem}")
        raise Transient(problem, retry_after(response.headers))

    return await with_retries(
        attempt, service=service, error=error, max_retries=max_retries, backoff=backoff
    )


def unexpected_response(service: str, exc: ValidationError) -> str:
    """What a response that does not have the expected shape gets wrong: its first problem, by path."""
    problem = exc.errors()[0]
    where = ".".join(str(part) for part in problem["loc"])
    return f"{service}: unexpected response: {where}: {problem['msg']}"


def is_transient(status: int) -> bool:
    """Whether another attempt may get another answer: rate limited or a server failure."""
    return status == 429 or status >= 500


def retry_after(headers: Mapping[str, str]) -> float | None:
    """The server's ``Retry-After`` in seconds, capped; ``None`` if absent or an HTTP date."""
    try:
        seconds = float(headers.get("retry-after", ""))
    except (TypeError, ValueError):
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
    try:
        body = response.json()
    except ValueError:
        body = None
    return excerpt(body, response.text, secrets)


def excerpt(body: Any, text: str, secrets: list[str]) -> str:
    """The server's error message if its JSON ``body`` has a usual shape, else ``text``'s start."""
    candidates: list[Any] = []
    if isinstance(body, dict):
        inner = body.get("error")
        nested = inner.get("message") if isinstance(inner, dict) else inner
        candidates = [nested, body.get("message"), body.get("detail")]
    message = next((c for c in candidates if isinstance(c, str) and c.strip()), None)
    text = message if message is not None else text
    text = " ".join(text.split()) or "(empty body)"
    if len(text) > _EXCERPT_CHARS:
        text = text[:_EXCERPT_CHARS] + "..."
    return redact(text, secrets)


def redact(text: str, secrets: list[str]) -> str:
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
    """Where a model served over HTTP lives and how to reach it."""

    # How requests are made, never what a model answers: kept out of an embedding cache's key.
    transport_settings: ClassVar[frozenset[str]] = frozenset(
        {"timeout", "max_retries", "retry_delay", "api_key_env"}
    )

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
    retry_delay: float = Field(
        default=0.5,
        ge=0,
        description="Seconds before the first retry, doubled (and jittered) for each next one; "
        "a server's Retry-After wins.",
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


def key_required(base_url: str) -> bool:
    """Whether the API at ``base_url`` refuses every request without a key."""
    return httpx.URL(base_url).host in _HOSTS_THAT_NEED_A_KEY


class KeyedEndpoint:
    """An HTTP API at a base URL with an optional bearer key: how it is named in
    errors and logs, and what a missing key is told."""

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

    @classmethod
    def for_model(
        cls: type[_Endpoint],
        parameters: EndpointParameters,
        credential: ApiKeyCredential | None,
        credential_type: type[ApiKeyCredential],
        label: str,
    ) -> _Endpoint:
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

    @property
    def secrets(self) -> list[str]:
        """What must never appear in a message: the key, if there is one."""
        return [self._api_key.get_secret_value()] if self._api_key is not None else []

    def refuse_without_key(self, error: type[RagflowError]) -> None:
        """Raise ``error`` at once for a public API that answers nothing without a key:
        no retries, no network, and the variable named."""
        if self._api_key is None and key_required(self.base_url):
            raise error(
                f"{self.service}: no API key; set the environment variable {self._api_key_env}"
            )

    def with_key_hint(self, message: str) -> str:
        """``message``, naming the key's variable when no key was sent and the server refused."""
        if self._api_key is None and re.search(r": HTTP 40[13]\b", message):
            return (
                f"{message}; no API key was sent: set the environment variable {self._api_key_env}"
            )
        return message


_Endpoint = TypeVar("_Endpoint", bound=KeyedEndpoint)


class JSONEndpoint(KeyedEndpoint):
    """A JSON-over-HTTP API (``POST {base_url}/{path}``) through httpx, one client per loop."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients = PerLoop(
            lambda: httpx.AsyncClient(timeout=self._timeout), lambda client: client.aclose()
        )

    async def post(
        self,
        path: str,
        payload: dict[str, Any],
        *,
        error: type[RagflowError],
        max_retries: int,
        retry_delay: float,
    ) -> Any:
        self.refuse_without_key(error)
        headers = (
            {"Authorization": f"Bearer {self._api_key.get_secret_value()}"}
            if self._api_key is not None
            else None
        )
        try:
            return await post_json(
                self._clients.get(),
                f"{self.base_url}/{path}",
                payload,
                service=self.service,
                error=error,
                headers=headers,
                max_retries=max_retries,
                backoff=retry_delay,
            )
        except RagflowError as exc:
            hinted = self.with_key_hint(str(exc))
            if hinted == str(exc):
                raise
            raise error(hinted) from exc

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one."""
        await self._clients.aclose()


class PerLoop(Generic[C]):
    """A client made on first use in each event loop.

    A client's connections belong to the event loop that opened them, so an
    endpoint reused under a new loop (a second ``asyncio.run``) needs a new client.
    """

    def __init__(self, make: Callable[[], C], close: Callable[[C], Awaitable[None]]) -> None:
        self._make = make
        self._close = close
        self._client: C | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> C:
        loop = asyncio.get_running_loop()
        if self._client is None or self._loop is not loop:
            self._client = self._make()
            self._loop = loop
        return self._client

    async def aclose(self) -> None:
        """Close the client; a later call opens a new one."""
        client, self._client = self._client, None
        # A client opened under another, finished loop cannot be closed from this one.
        if client is not None and self._loop is asyncio.get_running_loop():
            await self._close(client)


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
