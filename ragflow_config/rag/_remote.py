"""A knowledge base that `ragflow-config serve` serves elsewhere, read over its HTTP API."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Literal, overload
from urllib.parse import quote

import httpx
from pydantic import SecretStr

from .._document import DocumentSummary, VectorSearchResult
from .._errors import (
    CollectionMismatchError,
    EmbeddingError,
    RagflowError,
    RemoteKnowledgeBaseError,
    VectorStoreError,
)
from .._foreign import converted, refuse_agentscope_callers
from .._http import (
    EndpointOwner,
    PerLoop,
    Transient,
    excerpt,
    redact,
    retry_after,
    with_retries,
)
from .._redact import redact_url
from .._search_input import SearchInputError
from ..credential import RemoteCredential
from ..message import DataBlock, TextBlock
from ._explain import ExplainedHit

logger = logging.getLogger("ragflow_config.remote")

# The library's exception for a server's 503, by the error body's ``type``.
_UNAVAILABLE: dict[str, type[RagflowError]] = {
    "EmbeddingError": EmbeddingError,
    "CollectionMismatchError": CollectionMismatchError,
}


class RemoteKnowledgeBase(EndpointOwner):
    """A knowledge base served by ``ragflow-config serve``, with ``KnowledgeBase``'s read side.

    ``search`` takes what ``KnowledgeBase.search`` takes (several queries,
    ``top_k``, ``score_threshold``, ``where``, ``explain``) and ranks on the
    server, with the served knowledge base's retrieval settings, reranker and
    scope; ``list_documents`` lists its documents. It goes wherever a
    ``KnowledgeBase`` is read: ``RAGMiddleware``, and AgentScope's through
    ``ragflow_config.agentscope_bridge.knowledge_base``. It writes nothing.

    Failures raise what a local knowledge base raises: ``EmbeddingError``
    and ``VectorStoreError`` when the server's model or store is down
    (``VectorStoreError`` too when the server cannot be reached, or keeps
    answering 429 past ``max_retries``), ``CollectionMismatchError``, and a
    ``ValueError`` (``SearchInputError``) for a request the server refuses
    as bad input. A wrong token, an unknown name or a server failure raise
    :class:`~ragflow_config.RemoteKnowledgeBaseError` with the HTTP status.

    ``token`` is the server's bearer token; by default it is read from
    ``RAGFLOW_REMOTE_TOKEN`` (``RemoteCredential``), never from a file, and
    no ``repr``, error or log line shows it. ``description`` is the
    server's, read on entering (``async with``) unless given.
    """

    _endpoint: PerLoop[httpx.AsyncClient]  # the HTTP client, one per event loop

    def __init__(
        self,
        url: str,
        name: str,
        *,
        token: str | SecretStr | None = None,
        description: str | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        retry_delay: float = 0.5,
    ) -> None:
        parsed = httpx.URL(url)
        if parsed.scheme not in ("http", "https") or not parsed.host:
            raise ValueError(f"RemoteKnowledgeBase: url must be http(s)://host[:port], not {url!r}")
        if isinstance(token, str):
            token = SecretStr(token)
        self._token = token if token is not None else RemoteCredential.from_environment().token
        self.url = url.rstrip("/")
        self.name = name
        self.description = description or ""
        self._described = description is not None
        self._timeout = timeout
        self._max_retries = max_retries
        self._retry_delay = retry_delay
        self._endpoint = PerLoop(
            lambda: httpx.AsyncClient(timeout=self._timeout), lambda client: client.aclose()
        )

    def __repr__(self) -> str:
        return f"RemoteKnowledgeBase(url={redact_url(self.url)!r}, name={self.name!r})"

    @property
    def service(self) -> str:
        """How errors name this knowledge base: its name and server, no credentials."""
        return f"knowledge base {self.name!r} at {redact_url(self.url)}"

    async def __aenter__(self) -> RemoteKnowledgeBase:
        """Read the description from the server (a wrong url, token or name fails here);
        leaving closes the HTTP client (``aclose``)."""
        if not self._described:
            found = await self._request("GET", self._path())
            self.description = str(found.get("description", ""))
            self._described = True
        return self

    @overload
    async def search(
        self,
        queries: Sequence[str | TextBlock | DataBlock],
        top_k: int = 5,
        score_threshold: float | None = None,
        *,
        where: dict[str, Any] | None = None,
        explain: Literal[False] = False,
    ) -> list[VectorSearchResult]: ...

    @overload
    async def search(
        self,
        queries: Sequence[str | TextBlock | DataBlock],
        top_k: int = 5,
        score_threshold: float | None = None,
        *,
        where: dict[str, Any] | None = None,
        explain: Literal[True],
    ) -> list[ExplainedHit]: ...

    @overload
    async def search(
        self,
        queries: Sequence[str | TextBlock | DataBlock],
        top_k: int = 5,
        score_threshold: float | None = None,
        *,
        where: dict[str, Any] | None = None,
        explain: bool,
    ) -> list[VectorSearchResult]: ...

    @refuse_agentscope_callers  # given to AgentScope's RAGMiddleware, it would get our hits
    async def search(
        self,
        queries: Sequence[str | TextBlock | DataBlock],
        top_k: int = 5,
        score_threshold: float | None = None,
        *,
        where: dict[str, Any] | None = None,
        explain: bool = False,
    ) -> list[VectorSearchResult] | list[ExplainedHit]:
        """``KnowledgeBase.search`` on the server: the same hits, in the same order.

        The HTTP API takes text: ``DataBlock`` queries are dropped, with a
        warning (a served knowledge base searches by text only).
        """
        if isinstance(queries, str):
            raise TypeError("search() takes a list of queries, not a single string")
        texts = []
        for query in (converted(q, TextBlock, DataBlock) for q in queries):
            if isinstance(query, DataBlock):
                logger.warning(
                    "%s: a %s query dropped: a served knowledge base is searched by text only",
                    self.service,
                    query.media_type,
                )
                continue
            texts.append(query.text if isinstance(query, TextBlock) else query)
        if not texts or top_k <= 0:
            return []
        body: dict[str, Any] = {"query": texts, "top_k": top_k, "explain": explain}
        if score_threshold is not None:
            body["score_threshold"] = score_threshold
        if where:
            body["filter"] = where
        found = await self._request("POST", self._path("search"), body)
        kind = ExplainedHit if explain else VectorSearchResult
        return [kind.model_validate(hit) for hit in found["hits"]]

    async def list_documents(self) -> list[DocumentSummary]:
        """One summary per document of the served knowledge base (by source path)."""
        documents: list[DocumentSummary] = []
        while True:
            # No limit asked: the server's page is its --max-list-limit, whatever it is.
            page = await self._request(
                "GET", self._path("documents"), params={"offset": len(documents)}
            )
            documents += [DocumentSummary.model_validate(d) for d in page["documents"]]
            if not page["documents"] or len(documents) >= page["total"]:
                return documents

    # -- the requests ---------------------------------------------------------

    def _path(self, *parts: str) -> str:
        return "/".join([self.url, "v1/knowledge-bases", quote(self.name, safe=""), *parts])

    @property
    def _secrets(self) -> list[str]:
        return [] if self._token is None else [self._token.get_secret_value()]

    async def _request(
        self,
        method: str,
        url: str,
        body: dict[str, Any] | None = None,
        *,
        params: dict[str, int] | None = None,
    ) -> dict[str, Any]:
        """The JSON answer; 429 and transport failures retried, others raised as the library's."""
        headers = {"Accept": "application/json"}
        if self._token is not None:
            headers["Authorization"] = f"Bearer {self._token.get_secret_value()}"
        secrets = self._secrets

        async def attempt() -> dict[str, Any]:
            try:
                response = await self._endpoint.get().request(
                    method, url, json=body, params=params, headers=headers
                )
            except httpx.TransportError as exc:
                raise Transient(
                    f"{type(exc).__name__}: {redact(str(exc), secrets)}".rstrip(": ")
                ) from None
            if response.status_code == 429:  # the server's admission: come back later
                problem = f"HTTP 429: {self._message(response)}"
                raise Transient(problem, retry_after(response.headers))
            if not response.is_success:
                raise self._error(response)
            try:
                answer = response.json()
            except ValueError:
                answer = None
            if not isinstance(answer, dict):
                raise RemoteKnowledgeBaseError(
                    f"{self.service}: HTTP {response.status_code} with a body that is not a "
                    "JSON object; is the url a ragflow-config server's?",
                    status=response.status_code,
                )
            return answer

        return await with_retries(
            attempt,
            service=self.service,
            error=self._unreachable,
            max_retries=self._max_retries,
            backoff=self._retry_delay,
        )

    def _unreachable(self, message: str) -> VectorStoreError:
        """The error once retries are spent: the server is as good as a store that is down."""
        return VectorStoreError(self.service, message.removeprefix(f"{self.service}: "))

    def _message(self, response: httpx.Response) -> str:
        try:
            body = response.json()
        except ValueError:
            body = None
        return excerpt(body, response.text, self._secrets)

    def _error(self, response: httpx.Response) -> Exception:
        """The library's exception for the server's error answer."""
        status = response.status_code
        message = self._message(response)
        if status in (400, 413, 415):
            return SearchInputError(f"{self.service}: {message}")
        if status == 503:
            kind = _error_type(response)
            if kind in _UNAVAILABLE:
                return _UNAVAILABLE[kind](f"{self.service}: {message}")
            return VectorStoreError(self.service, message)
        hint = ""
        if status == 401:
            hint = (
                "; set RAGFLOW_REMOTE_TOKEN to the server's token"
                if self._token is None
                else "; the token sent is not the server's"
            )
        return RemoteKnowledgeBaseError(
            f"{self.service}: HTTP {status}: {message}{hint}", status=status
        )


def _error_type(response: httpx.Response) -> str | None:
    """The ``type`` the server gave its error (the library exception it stands for)."""
    try:
        error = response.json().get("error")
    except (ValueError, AttributeError):
        return None
    kind = error.get("type") if isinstance(error, dict) else None
    return kind if isinstance(kind, str) else None
