"""What Ollama's embedding and chat models share: where the server is, its key, and
how calls through the ``ollama`` package are retried and their failures worded."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

import httpx
from pydantic import Field, SecretStr, ValidationError

from ._errors import RagflowError
from ._http import (
    EndpointParameters,
    PerLoop,
    Transient,
    is_transient,
    unexpected_response,
    with_retries,
)
from ._redact import redact_url, redact_urls
from .credential import OllamaCredential

if TYPE_CHECKING:
    import ollama

# Where configs written for Ollama's OpenAI-compatible API point; the suffix is dropped.
OLLAMA_URL = "http://localhost:11434/v1"
REQUIRES: dict[str, str] = {"ollama": "ollama"}

T = TypeVar("T")
P = TypeVar("P", bound="OllamaParameters")
logger = logging.getLogger("ragflow_config.http")

_BACKOFF = 0.5
_EXCERPT_CHARS = 300


class OllamaParameters(EndpointParameters):
    """Where an Ollama model lives and how to reach it."""

    base_url: str = Field(
        default=OLLAMA_URL,
        pattern=r"^https?://",
        description="The Ollama server (http://host:11434); a /v1 suffix is ignored.",
    )
    api_key_env: str = Field(
        default="OLLAMA_API_KEY",
        description="Environment variable holding a key, for a server behind a proxy.",
    )

    @property
    def host(self) -> str:
        """The server's root, which the ``ollama`` client is given."""
        return self.base_url.removesuffix("/v1")


def from_credential(
    credential: OllamaCredential | None, parameters: P | None, options: dict[str, Any]
) -> P | None:
    """The parameters (or ``options``) with the credential's ``host`` as ``base_url``.

    As in AgentScope, an ``OllamaCredential`` says where the server is; it
    then replaces ``base_url``. Without one, nothing changes.
    """
    if credential is None:
        return parameters
    base_url = credential.host.rstrip("/")
    if parameters is not None:
        return parameters.model_copy(update={"base_url": base_url})
    options["base_url"] = base_url
    return None


class OllamaEndpoint:
    """An Ollama server through the ``ollama`` package: one client per event loop,
    transient failures retried, every failure worded with the model, the server and
    what to do."""

    def __init__(
        self, parameters: OllamaParameters, credential: OllamaCredential | None, label: str
    ) -> None:
        key = credential.api_key if credential is not None else None
        if key is None and os.environ.get(parameters.api_key_env):
            key = SecretStr(os.environ[parameters.api_key_env])
        self._parameters = parameters
        self._api_key = key
        self._label = f"{label} ({parameters.model})"
        self._clients: PerLoop[ollama.AsyncClient] = PerLoop(
            self._new_client, lambda client: client.close()
        )

    @property
    def host(self) -> str:
        return self._parameters.host

    @property
    def service(self) -> str:
        """How errors and logs name the remote: never with credentials in the URL."""
        return f"{self._label} at {redact_url(self.host)}"

    async def call(
        self,
        request: Callable[[ollama.AsyncClient], Awaitable[T]],
        *,
        error: type[RagflowError],
    ) -> T:
        """``request`` made with this server's client, retried while the failure is
        transient (429, 5xx, network, timeout), each failure raised as ``error``."""
        import ollama

        async def attempt() -> T:
            try:
                return await request(self._clients.get())
            except ollama.ResponseError as exc:
                problem = self._response_problem(exc)
                if not is_transient(exc.status_code):
                    raise error(f"{self.service}: {problem}") from None
                raise Transient(problem) from None
            except ConnectionError:  # the package's wording of httpx.ConnectError
                raise Transient(
                    f"cannot connect: is `ollama serve` running at {self.host}?"
                ) from None
            except httpx.TimeoutException:
                raise Transient(
                    f"no answer within {self._parameters.timeout:g} s (timeout)"
                ) from None
            except httpx.TransportError as exc:
                raise Transient(self._redact(f"{type(exc).__name__}: {exc}".rstrip(": "))) from None
            except ValidationError as exc:
                raise error(unexpected_response(self.service, exc)) from None
            except ValueError:  # a body that is not JSON
                raise error(f"{self.service}: a response that is not JSON") from None

        p = self._parameters
        return await with_retries(
            attempt,
            service=self.service,
            error=error,
            max_retries=p.max_retries,
            backoff=p.retry_delay,
        )

    def _response_problem(self, exc: ollama.ResponseError) -> str:
        model = self._parameters.model
        message = " ".join(str(exc.error).split()) or "(empty body)"
        if len(message) > _EXCERPT_CHARS:
            message = message[:_EXCERPT_CHARS] + "..."
        message = self._redact(message)
        if exc.status_code == 404 and "not found" in message:
            return f"model {model!r} not found: run `ollama pull {model}` ({message})"
        if exc.status_code in (401, 403) and self._api_key is None:
            return (
                f"HTTP {exc.status_code}: {message}; no API key was sent: "
                f"set the environment variable {self._parameters.api_key_env}"
            )
        return f"HTTP {exc.status_code}: {message}"

    def _redact(self, text: str) -> str:
        """Hide the key if a proxy echoed it back, and any credentials in a quoted URL."""
        if self._api_key is not None and len(self._api_key.get_secret_value()) >= 8:
            text = text.replace(self._api_key.get_secret_value(), "***")
        return redact_urls(text)

    def _new_client(self) -> ollama.AsyncClient:
        import ollama

        headers = (
            {"authorization": f"Bearer {self._api_key.get_secret_value()}"}
            if self._api_key is not None
            else None
        )
        return ollama.AsyncClient(host=self.host, timeout=self._parameters.timeout, headers=headers)

    async def aclose(self) -> None:
        """Close the HTTP client; a later call opens a new one."""
        await self._clients.aclose()
