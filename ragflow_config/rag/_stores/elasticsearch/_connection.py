"""Elasticsearch's client and its lifecycle: the hosts, the credentials, and requests
retried while the cluster is overloaded or unreachable."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from http import HTTPStatus
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from pydantic import Field, field_validator

from ...._component import RELATIVE_PATH
from ...._errors import VectorStoreError
from ...._extras import require
from ...._redact import redact_url
from ....credential import ElasticsearchCredential, MissingSecretError
from ..base import StoreParameters, VectorStoreBase, with_retries
from ._mappings import index_name_problem

if TYPE_CHECKING:
    from typing_extensions import Self

T = TypeVar("T")

MAX_K = 10_000  # ES caps k and num_candidates here
_TRANSIENT_STATUSES = frozenset({429, 502, 503, 504})
_TOO_LARGE = 413


class _Overloaded(Exception):
    """A retryable HTTP status (429, 502, 503, 504)."""


class ElasticsearchConnection(VectorStoreBase):
    """An Elasticsearch client, made on entering: ``ElasticsearchStore`` and its parts
    (``_search``, ``_pointers``) share what is here."""

    class Parameters(StoreParameters):
        hosts: str | list[str] = Field(
            description="URL of an Elasticsearch node, or a list of them.",
        )
        api_key_env: str = Field(
            default="ELASTICSEARCH_API_KEY",
            description="Environment variable holding an API key, if the cluster needs one.",
        )
        username_env: str = Field(
            default="ELASTICSEARCH_USERNAME",
            description="Environment variable holding a basic-auth user name.",
        )
        password_env: str = Field(
            default="ELASTICSEARCH_PASSWORD",
            description="Environment variable holding the basic-auth password.",
        )
        ca_certs: str | None = Field(
            default=None,
            description="CA bundle that signed the cluster's TLS certificate.",
            json_schema_extra=RELATIVE_PATH,
        )
        num_candidates: int = Field(
            default=100,
            ge=1,
            le=MAX_K,
            description="Candidates each shard considers per search (raised to top_k if lower).",
        )
        refresh: bool | Literal["wait_for"] = Field(
            default="wait_for",
            description="Make writes searchable before returning: wait_for, true (force) or false.",
        )
        batch_size: int = Field(default=500, ge=1, description="Records per bulk request.")
        connect_timeout: float = Field(
            default=5.0,
            gt=0,
            description=(
                "Seconds to open a connection before an attempt fails (and is retried): "
                "a host that does not answer is reported in seconds, not minutes."
            ),
        )
        timeout: float = Field(
            default=30.0, gt=0, description="Seconds to wait for a reply to a request."
        )

        @field_validator("hosts")
        @classmethod
        def _some_host(cls, hosts: str | list[str]) -> str | list[str]:
            if not hosts or (isinstance(hosts, list) and not all(hosts)):
                raise ValueError("give at least one host URL")
            return hosts

    parameters: Parameters

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: ElasticsearchCredential | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        self._credential = credential

    @property
    def store_name(self) -> str:
        hosts = self.parameters.hosts
        urls = [hosts] if isinstance(hosts, str) else hosts
        return f"ElasticsearchStore({', '.join(redact_url(url) for url in urls)})"

    async def __aenter__(self) -> Self:
        import httpx

        elasticsearch = require("elasticsearch", "elasticsearch")
        p = self.parameters
        # Retries are ours (with backoff, mapped to VectorStoreError), not the transport's.
        # No request_timeout here: the client would pass it with every request as
        # one number for connecting and reading, overriding the nodes' own below.
        self._client = elasticsearch.AsyncElasticsearch(
            hosts=p.hosts,
            node_class="httpxasync",  # httpx is a core dependency; aiohttp would be another
            max_retries=0,
            retry_on_timeout=False,
            ca_certs=p.ca_certs,
            **self._auth(),
            **self.client_kwargs,
        )
        timeout = httpx.Timeout(p.timeout, connect=p.connect_timeout)
        for node in self._client.transport.node_pool.all():
            node.client.timeout = timeout
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self._close_client()

    async def probe(self) -> str:
        async with self:  # entering only makes a client
            info = await self._call(self.client.info)
        version = info["version"]["number"] if info is not None else "?"
        return f"the server answers (Elasticsearch {version})"

    def _auth(self) -> dict[str, Any]:
        p = self.parameters
        credential = self._credential or ElasticsearchCredential.from_environment(
            {"api_key": p.api_key_env, "username": p.username_env, "password": p.password_env}
        )
        if credential.api_key is not None:
            return {"api_key": credential.api_key.get_secret_value()}
        if credential.username is None and credential.password is None:
            return {}
        if credential.username is None or credential.password is None:
            raise MissingSecretError(
                f"{self.store_name}: basic auth needs both {p.username_env} and {p.password_env}"
            )
        return {"basic_auth": (credential.username, credential.password.get_secret_value())}

    async def _call(
        self, operation: Callable[[], Awaitable[T]], *, tolerate: frozenset[str] = frozenset()
    ) -> T | None:
        """Run a request with retries; ``None`` if it failed with an error type in ``tolerate``."""
        elasticsearch = require("elasticsearch", "elasticsearch")

        async def attempt() -> T | None:
            try:
                return await operation()
            except elasticsearch.ApiError as exc:
                if exc.message in tolerate:
                    return None
                if exc.meta.status in _TRANSIENT_STATUSES:
                    raise _Overloaded(describe(exc)) from exc
                cause = describe(exc)
                if exc.meta.status == _TOO_LARGE:
                    cause += " (past the cluster's http.max_content_length: lower batch_size)"
                if exc.meta.status == 401:
                    p = self.parameters
                    cause += f" (credentials come from {p.api_key_env}, or {p.username_env} and "
                    cause += f"{p.password_env})"
                raise VectorStoreError(self.store_name, cause) from exc

        return await with_retries(
            self.store_name,
            attempt,
            retry_on=(elasticsearch.ConnectionError, elasticsearch.ConnectionTimeout, _Overloaded),
            attempts=self.parameters.max_retries + 1,
        )

    def _index(self, name: str) -> str:
        problem = index_name_problem(name)
        if problem:
            raise ValueError(f"{self.store_name}: invalid index name {name!r}: {problem}")
        return name


def describe(exc: Any) -> str:
    status = exc.meta.status
    if not isinstance(exc.body, dict):  # e.g. the answer to a HEAD request
        try:
            return f"HTTP {status} {HTTPStatus(status).phrase}"
        except ValueError:
            return f"HTTP {status}"
    cause = f"HTTP {status} {exc.message}"
    error = exc.body.get("error")
    if isinstance(error, dict) and error.get("reason"):
        cause += f": {error['reason']}"
    return cause
