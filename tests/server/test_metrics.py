"""`GET /metrics` of a real `serve` process, read with prometheus-client's own parser:
after a known load, every count is the number of requests sent."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from ._serving import TOKEN, ServerProcess, tool_call

SEARCH = "/v1/knowledge-bases/{}/search"
ROUTE = "/v1/knowledge-bases/{name}/search"


def _samples(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _value(
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str
) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


def test_metrics_count_what_was_asked_behind_the_token(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server.url, timeout=60, headers=auth) as client:
        for _ in range(7):
            assert client.post(SEARCH.format("tutorial"), json={"query": "read a file"}).is_success
        for _ in range(3):
            assert client.post(SEARCH.format("howto"), json={"query": "logging"}).is_success
        assert client.post(SEARCH.format("tutorial"), json={"query": " "}).status_code == 400
        assert client.post(SEARCH.format("nowhere"), json={"query": "x"}).status_code == 404
        assert client.get("/no/such/path").status_code == 404
        for _ in range(5):
            assert client.get("/healthz").status_code == 200
        assert tool_call(client, {"query": "sorting"})["isError"] is False
        assert httpx.get(f"{server.url}/metrics").status_code == 401  # no token
        page = client.get("/metrics")
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/plain; version=")
    samples = _samples(page.text)

    def requests(route: str, method: str, status: str) -> float:
        return _value(
            samples, "ragflow_http_requests_total", route=route, method=method, status=status
        )

    assert requests(ROUTE, "POST", "200") == 10
    assert requests(ROUTE, "POST", "400") == 1
    assert requests(ROUTE, "POST", "404") == 1
    assert requests("(none)", "GET", "404") == 1
    assert requests("(none)", "GET", "401") == 1  # refused before routing
    assert requests("/healthz", "GET", "200") == 5
    assert requests("/mcp", "POST", "200") == 1
    timed = _value(
        samples, "ragflow_http_request_duration_seconds_count", route=ROUTE, method="POST"
    )
    assert timed == 12
    # the tool searches both knowledge bases once: 7 + 1 and 3 + 1
    for name, searches in (("tutorial", 8), ("howto", 4)):
        assert (
            _value(samples, "ragflow_retrievals_total", knowledge_base=name, mode="dense")
            == searches
        )
        assert (
            _value(
                samples,
                "ragflow_step_duration_seconds_count",
                operation="store.search",
                knowledge_base=name,
                side="dense",
            )
            == searches
        )
        assert (
            _value(
                samples,
                "ragflow_step_duration_seconds_count",
                operation="embeddings",
                knowledge_base=name,
                side="",
            )
            == searches
        )
    assert _value(samples, "ragflow_knowledge_base_documents", knowledge_base="tutorial") == 3
    assert _value(samples, "ragflow_knowledge_base_documents", knowledge_base="howto") == 2
    assert _value(samples, "ragflow_knowledge_base_chunks", knowledge_base="tutorial") >= 3
    assert _value(samples, "ragflow_admission_running") == 0  # /metrics takes no place
    assert _value(samples, "ragflow_admission_queued") == 0


def test_metrics_port_serves_metrics_alone_on_loopback_without_the_token(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed), "--metrics-port", "0", env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    [metrics_url] = re.findall(r"metrics at (http://127\.0\.0\.1:\d+/metrics)", server.log)
    side = metrics_url.removesuffix("/metrics")
    assert side != server.url
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=server.url, timeout=60, headers=auth) as client:
        for _ in range(3):
            assert client.post(SEARCH.format("tutorial"), json={"query": "read a file"}).is_success
        assert client.get("/metrics").status_code == 200  # the main port keeps it, with the token
    assert httpx.get(f"{server.url}/metrics").status_code == 401

    page = httpx.get(metrics_url, timeout=60)  # no token
    assert page.status_code == 200, page.text
    samples = _samples(page.text)
    assert (
        _value(samples, "ragflow_http_requests_total", route=ROUTE, method="POST", status="200")
        == 3
    )
    assert _value(samples, "ragflow_retrievals_total", knowledge_base="tutorial", mode="dense") == 3
    # Nothing else is served there, and a page's DNS rebinding cannot read it.
    assert httpx.get(f"{side}/v1/knowledge-bases", timeout=60).status_code == 404
    assert httpx.get(metrics_url, headers={"Host": "evil.example"}, timeout=60).status_code == 403
    assert server.stop() == 0
