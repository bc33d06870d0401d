"""``GET /metrics``: what the server did, in Prometheus's text exposition format.

Served behind the token with the rest, and, with ``serve --metrics-port``, on a
port of its own bound to loopback, without the token (:func:`metrics_app`): a
scraper on the same machine needs no secret, and nothing else is served there.

Every series is in the application's own registry (two applications in one
process count apart) and is named ``ragflow_...``:

- ``ragflow_http_requests_total{route, method, status}`` and
  ``ragflow_http_request_duration_seconds{route, method}``: each request, by its
  route's template (``/v1/knowledge-bases/{name}/search``), never its path;
- ``ragflow_retrievals_total{knowledge_base, mode}`` and
  ``ragflow_retrieval_duration_seconds``: each search of a knowledge base (HTTP,
  MCP and ``/ui`` alike), and ``..._failures_total``;
- ``ragflow_step_duration_seconds{operation, knowledge_base, side}``: the store
  searches (``store.search``, dense or lexical side), the query's embedding
  (``embeddings``) and the reranker (``rerank``), from ``ragflow_config._observe``;
- ``ragflow_admission_running``, ``ragflow_admission_queued`` and
  ``ragflow_admission_refusals_total{reason}`` (client, queue, wait);
- ``ragflow_knowledge_base_documents`` and ``..._chunks{knowledge_base}``: as
  the store counts them, asked at most once every ``COUNTS_SECONDS`` (a count
  lists every document);
- ``ragflow_refreshes_total{knowledge_base, result}`` (ok, failed) and
  ``ragflow_refresh_seconds``: the refreshes the server ran (``_refresh``).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.exposition import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Scope

from ._admission import Admission, Refused
from ._guards import HostOriginMiddleware, route_template
from ._refresh import RefreshResult
from ._service import KnowledgeService, ServiceError

logger = logging.getLogger("ragflow_config.server")

COUNTS_SECONDS = 30.0
# Searches take milliseconds with a local model and seconds with a remote one.
_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    """One server's series; see the module's docstring."""

    def __init__(self, admission: Admission) -> None:
        self.registry = registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "ragflow_http_requests",
            "HTTP requests answered, by route template, method and status",
            ["route", "method", "status"],
            registry=registry,
        )
        self.request_seconds = Histogram(
            "ragflow_http_request_duration_seconds",
            "Time from a request's arrival to the end of its answer",
            ["route", "method"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.retrievals = Counter(
            "ragflow_retrievals",
            "Searches of a knowledge base, by retrieval mode",
            ["knowledge_base", "mode"],
            registry=registry,
        )
        self.retrieval_failures = Counter(
            "ragflow_retrieval_failures",
            "Searches of a knowledge base that failed (a store or model error, a deadline)",
            ["knowledge_base", "mode"],
            registry=registry,
        )
        self.retrieval_seconds = Histogram(
            "ragflow_retrieval_duration_seconds",
            "Time of one search of a knowledge base, reranking included",
            ["knowledge_base", "mode"],
            buckets=_BUCKETS,
            registry=registry,
        )
        self.step_seconds = Histogram(
            "ragflow_step_duration_seconds",
            "Time of one store search (by side), query embedding or rerank",
            ["operation", "knowledge_base", "side"],
            buckets=_BUCKETS,
            registry=registry,
        )
        running = Gauge(
            "ragflow_admission_running",
            "Requests doing store or model work now",
            registry=registry,
        )
        running.set_function(lambda: admission.running)
        queued = Gauge(
            "ragflow_admission_queued",
            "Requests waiting for a place now",
            registry=registry,
        )
        queued.set_function(lambda: admission.queued)
        self.refusals = Counter(
            "ragflow_admission_refusals",
            "Requests answered 429: past a client's share (client), a full queue (queue), "
            "or no place freed in time (wait)",
            ["reason"],
            registry=registry,
        )
        self.documents = Gauge(
            "ragflow_knowledge_base_documents",
            "Documents in a knowledge base, as its store counts them",
            ["knowledge_base"],
            registry=registry,
        )
        self.chunks = Gauge(
            "ragflow_knowledge_base_chunks",
            "Chunks in a knowledge base, as its store counts them",
            ["knowledge_base"],
            registry=registry,
        )
        self.refreshes = Counter(
            "ragflow_refreshes",
            "Refreshes of a knowledge base in the server (serve --refresh-every, --watch, "
            "the refresh route), by result: ok or failed",
            ["knowledge_base", "result"],
            registry=registry,
        )
        self.refresh_seconds = Histogram(
            "ragflow_refresh_seconds",
            "How long a refresh took, whatever its result",
            buckets=(0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900, 3600),
            registry=registry,
        )
        self._counted_at = float("-inf")

    def answered(self, scope: Scope, status: int, seconds: float) -> None:
        """A listener of ``_guards.OutcomeMiddleware``: an HTTP request is answered."""
        route, method = route_template(scope), scope["method"]
        self.requests.labels(route, method, str(status)).inc()
        self.request_seconds.labels(route, method).observe(seconds)

    def refused(self, refused: Refused) -> None:
        self.refusals.labels(refused.reason).inc()

    def refreshed(self, result: RefreshResult) -> None:
        """A listener of ``_refresh.Refresher``: a refresh ended."""
        self.refresh_seconds.observe(result.seconds)
        for name in result.knowledge_bases:
            self.refreshes.labels(name, "ok" if result.ok(name) else "failed").inc()

    # -- an observer of ragflow_config._observe: a library step --------------------------

    def begin(self, operation: str, attributes: Mapping[str, str]) -> None:
        return None

    def end(
        self,
        operation: str,
        attributes: Mapping[str, str],
        begun: None,
        seconds: float,
        error: BaseException | None,
    ) -> None:
        knowledge_base = attributes.get("knowledge_base", "")
        if operation == "retrieval":
            mode = attributes.get("mode", "")
            self.retrievals.labels(knowledge_base, mode).inc()
            self.retrieval_seconds.labels(knowledge_base, mode).observe(seconds)
            if error is not None:
                self.retrieval_failures.labels(knowledge_base, mode).inc()
        else:
            side = attributes.get("side", "")
            self.step_seconds.labels(operation, knowledge_base, side).observe(seconds)

    async def count(self, service: KnowledgeService) -> None:
        """The knowledge bases' counts, asked again when older than ``COUNTS_SECONDS``;
        one that cannot be asked keeps its last count (its failure is in the log)."""
        now = time.monotonic()
        if now - self._counted_at < COUNTS_SECONDS:
            return
        self._counted_at = now
        for info in service.infos:
            with contextlib.suppress(ServiceError):
                status = await service.status(info.name)
                self.documents.labels(info.name).set(status.documents)
                self.chunks.labels(info.name).set(status.chunks)


async def metrics_page(request: Request) -> Response:
    metrics: Metrics = request.app.state.metrics
    await metrics.count(request.app.state.service)
    return Response(generate_latest(metrics.registry), media_type=CONTENT_TYPE_LATEST)


METRICS_HOST = "127.0.0.1"


def metrics_app(app: Starlette) -> Starlette:
    """``GET /metrics`` of ``app`` (its series, its knowledge bases) alone, for a port of
    its own on :data:`METRICS_HOST`: no token, and only loopback names in ``Host`` (a
    web page's DNS rebinding cannot read it)."""
    side = Starlette(
        routes=[Route("/metrics", metrics_page, methods=["GET"])],
        middleware=[
            Middleware(
                HostOriginMiddleware,
                host_names=frozenset({METRICS_HOST, "localhost"}),
                origins=(),
            )
        ],
    )
    side.state.metrics = app.state.metrics
    side.state.service = app.state.service
    return side
