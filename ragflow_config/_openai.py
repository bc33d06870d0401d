"""What OpenAI-compatible embedding and chat models share: calls through the ``openai``
SDK, retried and worded the way every model here words a failure."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ._errors import RagflowError
from ._http import (
    KeyedEndpoint,
    PerLoop,
    Transient,
    excerpt,
    is_transient,
    redact,
    retry_after,
    with_retries,
)

if TYPE_CHECKING:
    import openai

REQUIRES: dict[str, str] = {"openai": "openai"}

T = TypeVar("T")


class OpenAIEndpoint(KeyedEndpoint):
    """An OpenAI-compatible API through the ``openai`` SDK, as AgentScope's models call it.

    The SDK's own retries are off: transient failures (429, 5xx, network,
    timeout) are retried here, as for every other model, ``retry_delay``
    apart and doubled, or after the server's ``Retry-After``. One client per
    event loop. Without a key no ``Authorization`` header is sent at all
    (local servers need none), and the SDK never reads ``OPENAI_API_KEY``
    itself: the key comes only from the credential or ``api_key_env``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._clients: PerLoop[openai.AsyncClient] = PerLoop(
            self._new_client, lambda client: client.close()
        )

    async def call(
        self,
        request: Callable[[openai.AsyncClient, dict[str, Any] | None], Awaitable[T]],
        *,
        error: type[RagflowError],
        max_retries: int,
        retry_delay: float,
    ) -> T:
        """``request(client, extra_headers)``, retried while the failure is transient;
        every failure raised as ``error`` naming the service."""
        import openai

        self.refuse_without_key(error)
        # An explicit omission: the SDK otherwise refuses to send a request without a key.
        extra_headers = {"Authorization": openai.Omit()} if self._api_key is None else None

        async def attempt() -> T:
            try:
                result = await request(self._clients.get(), extra_headers)
            except openai.APIStatusError as exc:
                problem = f"HTTP {exc.status_code}: {self._message(exc)}"
                if not is_transient(exc.status_code):
                    raise error(self.with_key_hint(f"{self.service}: {problem}")) from None
                raise Transient(problem, retry_after(exc.response.headers)) from None
            except openai.APITimeoutError:
                raise Transient(f"no answer within {self._timeout:g} s (timeout)") from None
            except openai.APIConnectionError as exc:
                cause = exc.__cause__ or exc
                problem = f"{type(cause).__name__}: {cause}".rstrip(": ")
                raise Transient(redact(problem, self.secrets)) from None
            except openai.APIError as exc:  # a body the SDK could not read
                raise error(f"{self.service}: {redact(exc.message, self.secrets)}") from None
            except json.JSONDecodeError as exc:  # labelled JSON, but not JSON
                raise error(self._not_json(exc.doc)) from None
            if isinstance(result, str):  # what the SDK returns for a body not labelled JSON
                raise error(self._not_json(result))
            return result

        return await with_retries(
            attempt,
            service=self.service,
            error=error,
            max_retries=max_retries,
            backoff=retry_delay,
        )

    def _not_json(self, body: str) -> str:
        return (
            f"{self.service}: HTTP 200 with a body that is not JSON: "
            f"{excerpt(None, body, self.secrets)}"
        )

    def _message(self, exc: openai.APIStatusError) -> str:
        """The server's own words: the message of its JSON error body, else the SDK's."""
        return excerpt(exc.body, exc.message, self.secrets)

    def _new_client(self) -> openai.AsyncClient:
        import openai

        key = self._api_key.get_secret_value() if self._api_key is not None else "unused"
        return openai.AsyncClient(
            api_key=key, base_url=self.base_url, timeout=self._timeout, max_retries=0
        )

    async def aclose(self) -> None:
        """Close the SDK's client; a later call opens a new one."""
        await self._clients.aclose()
