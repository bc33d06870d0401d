"""Traces of a real `serve` process, exported over OTLP/HTTP to a receiver on loopback that
decodes the protobuf: the span tree of a search continues the client's traceparent."""

from __future__ import annotations

import http.server
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from ragflow_config._tracing import tracing_requested

from ._serving import ServerProcess, write_pipeline

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed")
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
)

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
PARENT_ID = "b7ad6b7169203331"


@contextmanager
def otlp_receiver() -> Iterator[tuple[str, list[Any]]]:
    """An OTLP/HTTP endpoint on loopback; every span it receives lands in the list."""
    spans: list[Any] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest.FromString(body)
            for resource_spans in request.resource_spans:
                for scope_spans in resource_spans.scope_spans:
                    spans.extend(scope_spans.spans)
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", spans
    finally:
        server.shutdown()
        server.server_close()


def test_no_otel_variable_no_tracing() -> None:
    assert not tracing_requested({})
    assert tracing_requested({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"})
    assert not tracing_requested(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}
    )
    assert not tracing_requested(
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}
    )


def _attributes(span: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for attribute in span.attributes:
        value = attribute.value
        found[attribute.key] = getattr(value, value.WhichOneof("value"))
    return found


def test_a_search_is_one_span_tree_under_the_clients_traceparent(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    with otlp_receiver() as (endpoint, spans):
        server = server_process(
            str(indexed),
            env={"OTEL_EXPORTER_OTLP_ENDPOINT": endpoint, "OTEL_BSP_SCHEDULE_DELAY": "50"},
        )
        with httpx.Client(base_url=server.url, timeout=60) as client:
            answer = client.post(
                "/v1/knowledge-bases/tutorial/search",
                json={"query": "read a file", "top_k": 3},
                headers={"traceparent": f"00-{TRACE_ID}-{PARENT_ID}-01"},
            )
        assert answer.status_code == 200
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(s.kind == 2 for s in spans):
            time.sleep(0.05)
        assert server.stop() == 0  # the provider's shutdown sends what is left
    by_name = {span.name: span for span in spans}
    request = by_name["POST /v1/knowledge-bases/{name}/search"]
    retrieval = by_name["retrieval tutorial"]
    embeddings = by_name["embeddings tutorial"]
    store = by_name["store.search dense"]
    assert request.trace_id.hex() == TRACE_ID and request.parent_span_id.hex() == PARENT_ID
    assert request.kind == 2  # SERVER
    assert _attributes(request)["http.response.status_code"] == 200
    assert _attributes(request)["http.route"] == "/v1/knowledge-bases/{name}/search"
    assert retrieval.parent_span_id == request.span_id
    assert embeddings.parent_span_id == retrieval.span_id
    assert store.parent_span_id == retrieval.span_id
    assert {span.trace_id.hex() for span in (retrieval, embeddings, store)} == {TRACE_ID}
    assert _attributes(retrieval) == {
        "gen_ai.operation.name": "retrieval",
        "gen_ai.data_source.id": "tutorial",
        "gen_ai.request.top_k": 3,
        "ragflow.retrieval.mode": "dense",
    }
    assert _attributes(embeddings)["gen_ai.operation.name"] == "embeddings"
    assert _attributes(store)["ragflow.retrieval.side"] == "dense"
    assert "read a file" not in str(spans)  # no content captured


def test_a_run_is_a_span_tree_per_knowledge_base_and_file(tmp_path: Path) -> None:
    file = write_pipeline(tmp_path)
    with otlp_receiver() as (endpoint, spans):
        env = {**os.environ, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
        done = subprocess.run(
            [sys.executable, "-m", "ragflow_config.cli", "run", str(file), "--workers", "0"],
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr  # the provider's shutdown sent every span
    runs = {span.name: span for span in spans if span.name.startswith("run ")}
    assert set(runs) == {"run tutorial", "run howto"}
    assert all(not span.parent_span_id for span in runs.values())
    by_parent: dict[bytes, list[Any]] = {}
    for span in spans:
        by_parent.setdefault(span.parent_span_id, []).append(span)
    files = by_parent[runs["run tutorial"].span_id]
    assert sorted(_attributes(s)["ragflow.file.path"] for s in files) == [
        "files.md",
        "lists.md",
        "loops.md",
    ]
    for span in files:
        assert span.name == "file"
        assert _attributes(span)["gen_ai.data_source.id"] == "tutorial"
        steps = {step.name: step for step in by_parent[span.span_id]}
        assert set(steps) == {"parse", "chunk", "embeddings tutorial", "store.write"}
        path = _attributes(span)["ragflow.file.path"]
        assert _attributes(steps["parse"])["ragflow.file.path"] == path
        assert _attributes(steps["embeddings tutorial"])["gen_ai.operation.name"] == "embeddings"
        assert steps["parse"].end_time_unix_nano <= steps["chunk"].start_time_unix_nano
        assert steps["embeddings tutorial"].end_time_unix_nano <= (
            steps["store.write"].start_time_unix_nano
        )
    assert len(by_parent[runs["run howto"].span_id]) == 2
    assert "zanzibar" not in str(spans)  # no document text captured
