"""Each HTTP request as an OpenTelemetry server span, continuing the client's traceparent.

Only with tracing on (``ragflow_config._tracing``): the span is the current
one while the request runs, so the library's steps (``retrieval``,
``embeddings``, ``store.search``) nest under it, and under the client's own
trace when its request carries a W3C ``traceparent``.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from .._tracing import Tracing
from ._guards import route_template


class TracingMiddleware:
    """Starts the request's span and makes it current; :func:`answered` (a listener of
    ``_guards.OutcomeMiddleware``, inside this one) names it by its route and status."""

    def __init__(self, app: ASGIApp, tracing: Tracing) -> None:
        self.app = app
        self.tracer = tracing.tracer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        from opentelemetry import context, trace
        from opentelemetry.trace import SpanKind
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        headers = scope["headers"]
        carrier = {name.decode("latin-1"): value.decode("latin-1") for name, value in headers}
        parent = TraceContextTextMapPropagator().extract(carrier)
        method = scope["method"]
        span = self.tracer.start_span(
            method,
            context=parent,
            kind=SpanKind.SERVER,
            attributes={"http.request.method": method, "url.path": scope["path"]},
        )
        token = context.attach(trace.set_span_in_context(span, parent))
        try:
            await self.app(scope, receive, send)
        finally:
            span.end()
            context.detach(token)


def answered(scope: Scope, status: int, seconds: float) -> None:
    """The current request span, named ``METHOD route`` and given its status."""
    from opentelemetry import trace
    from opentelemetry.trace import Status, StatusCode

    span = trace.get_current_span()
    route = route_template(scope)
    span.update_name(f"{scope['method']} {route}")
    span.set_attribute("http.route", route)
    span.set_attribute("http.response.status_code", status)
    if status >= 500:
        span.set_status(Status(StatusCode.ERROR))
