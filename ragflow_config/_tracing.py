"""OpenTelemetry traces of searches and runs, exported over OTLP/HTTP when the environment asks.

The standard variables decide: with ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` set (and ``OTEL_TRACES_EXPORTER`` not
``none``, ``OTEL_SDK_DISABLED`` not ``true``), :func:`tracer_from_environment`
builds a tracer on its own provider (the ``otel`` extra) whose spans go to that
endpoint in batches; with none set it returns None, nothing is imported and a
step costs what it costs without tracing. The exporter reads the rest of the
``OTEL_*`` variables itself (headers, timeout, compression), and the provider
``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES``.

Spans are named and described by OpenTelemetry's GenAI conventions where they
name the step: ``retrieval {knowledge base}`` (``gen_ai.operation.name`` =
``retrieval``, ``gen_ai.data_source.id``, ``gen_ai.request.top_k``),
``embeddings {knowledge base}`` (a query's, or a document's chunks' in a run)
and, in this project's own names, ``store.search {side}`` and ``rerank``. A
run (``ragflow-config run``) has ``run {knowledge base}``, under it a ``file``
span per file it writes (``ragflow.file.path``), and under that ``parse`` and
``chunk`` (or ``prepare``: both, in a parser process), ``embeddings`` and
``store.write``. No query or document text is recorded: content capture is
off, and there is no switch to turn it on yet.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from ._extras import require

SERVICE_NAME = "ragflow-config"


def tracing_requested(environ: Mapping[str, str] = os.environ) -> bool:
    """Whether the ``OTEL_*`` variables ask for traces to be exported over OTLP."""
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporters = environ.get("OTEL_TRACES_EXPORTER", "otlp").strip().lower()
    if "otlp" not in {name.strip() for name in exporters.split(",")}:
        return False
    return bool(
        environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


class Tracing:
    """A tracer on a provider of its own, and its spans for the library's steps
    (an observer of ``ragflow_config._observe``). ``shutdown()`` sends what is left."""

    def __init__(self) -> None:
        require("opentelemetry.sdk", "otel")
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor

        resource = Resource.create({"service.name": SERVICE_NAME}).merge(Resource.create())
        self._provider = TracerProvider(resource=resource)
        self._provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        self.tracer = self._provider.get_tracer("ragflow_config")

    def shutdown(self) -> None:
        self._provider.shutdown()

    # -- an observer of ragflow_config._observe --------------------------------------

    def begin(self, operation: str, attributes: Mapping[str, str]) -> Any:
        from opentelemetry import context, trace

        name, described = _described(operation, attributes)
        span = self.tracer.start_span(name, attributes=described)
        return span, context.attach(trace.set_span_in_context(span))

    def end(
        self,
        operation: str,
        attributes: Mapping[str, str],
        begun: Any,
        seconds: float,
        error: BaseException | None,
    ) -> None:
        from opentelemetry import context
        from opentelemetry.trace import Status, StatusCode

        span, token = begun
        if error is not None:
            span.set_attribute("error.type", type(error).__qualname__)
            span.set_status(Status(StatusCode.ERROR))
        span.end()
        context.detach(token)


def _described(operation: str, attributes: Mapping[str, str]) -> tuple[str, dict[str, Any]]:
    """A step's span name and attributes, by the GenAI conventions where they have one."""
    knowledge_base = attributes.get("knowledge_base", "")
    described: dict[str, Any] = {}
    if knowledge_base:
        described["gen_ai.data_source.id"] = knowledge_base
    if operation == "retrieval":
        described["gen_ai.operation.name"] = "retrieval"
        described["ragflow.retrieval.mode"] = attributes.get("mode", "")
        if "top_k" in attributes:
            described["gen_ai.request.top_k"] = int(attributes["top_k"])
        return f"retrieval {knowledge_base}", described
    if operation == "embeddings":
        described["gen_ai.operation.name"] = "embeddings"
        return f"embeddings {knowledge_base}", described
    if operation == "run":
        return f"run {knowledge_base}", described
    if "path" in attributes:  # a file's steps in a run: the span names the step, not the file
        described["ragflow.file.path"] = attributes["path"]
    side = attributes.get("side", "")
    if side:
        described["ragflow.retrieval.side"] = side
    return f"{operation} {side}".strip(), described


def tracing_from_environment() -> Tracing | None:
    """A :class:`Tracing` when the ``OTEL_*`` variables ask for one, else None (no cost)."""
    return Tracing() if tracing_requested() else None
