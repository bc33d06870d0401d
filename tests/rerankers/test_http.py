"""``HttpReranker`` against a real local server, in TEI's and Cohere's (Jina's) wire formats."""

from __future__ import annotations

import asyncio

import pytest

from ragflow_config.rerankers import HttpReranker
from ragflow_config.rerankers._http import RerankError

from ._server import RerankServer

PASSAGES = ["dogs bark at night", "cats sleep all day", "cats sleep in the sun all day"]
QUERY = "where do cats sleep in the day"


async def test_tei_scores_come_back_in_passage_order(
    server: RerankServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RERANK_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "openai-secret-1")  # another service's key
    async with HttpReranker(base_url=server.root) as reranker:
        scores = await reranker.scores(QUERY, PASSAGES)
    # Words shared with the query: none; cats, sleep, day; cats, sleep, in, the, day.
    assert scores == [0.0, 3.0, 5.0]
    [request] = server.requests
    assert (request.path, request.body) == ("/rerank", {"query": QUERY, "texts": PASSAGES})
    assert "authorization" not in request.headers  # RERANK_API_KEY unset: no key sent


async def test_cohere_format_sends_model_and_top_n_with_the_key_from_the_environment(
    server: RerankServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("JINA_API_KEY", "jina-secret-1")
    monkeypatch.setenv("OPENAI_API_KEY", "openai-secret-2")  # never sent to a reranker
    server.required_key = "jina-secret-1"
    reranker = HttpReranker(
        api="cohere", base_url=server.url, model="jina-reranker-v2", api_key_env="JINA_API_KEY"
    )
    async with reranker:
        assert await reranker.scores(QUERY, PASSAGES) == [0.0, 3.0, 5.0]
    [request] = server.requests
    assert request.path == "/v1/rerank"
    assert request.body == {
        "model": "jina-reranker-v2",
        "query": QUERY,
        "documents": PASSAGES,
        "top_n": 3,
    }
    assert request.headers["authorization"] == "Bearer jina-secret-1"


async def test_a_refused_request_without_a_key_names_the_variable(
    server: RerankServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RERANK_API_KEY", raising=False)
    server.required_key = "right-key"
    async with HttpReranker(api="cohere", base_url=server.url, max_retries=0) as reranker:
        with pytest.raises(RerankError, match="set the environment variable RERANK_API_KEY"):
            await reranker.scores(QUERY, PASSAGES)


async def test_a_wrong_key_is_never_repeated_in_the_error(
    server: RerankServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RERANK_API_KEY", "wrong-key-3")
    server.required_key = "right-key"
    async with HttpReranker(base_url=server.root, max_retries=0) as reranker:
        with pytest.raises(RerankError, match="HTTP 401") as error:
            await reranker.scores(QUERY, PASSAGES)
    assert "wrong-key-3" not in str(error.value)


async def test_a_public_api_without_a_key_fails_before_any_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("COHERE_API_KEY", raising=False)
    reranker = HttpReranker(
        api="cohere", base_url="https://api.cohere.com/v2", api_key_env="COHERE_API_KEY"
    )
    with pytest.raises(
        RerankError, match="no API key; set the environment variable COHERE_API_KEY"
    ):
        await reranker.scores(QUERY, PASSAGES)


async def test_a_response_missing_a_passage_is_an_error(server: RerankServer) -> None:
    server.drop_last = True
    async with HttpReranker(base_url=server.root) as reranker:
        with pytest.raises(
            RerankError, match=r"sent 3 passages but the response scores indexes \[0, 1\]"
        ):
            await reranker.scores(QUERY, PASSAGES)


async def test_a_response_of_another_shape_is_an_error(server: RerankServer) -> None:
    # The Cohere route answers {"results": [...]}; read as TEI's format it is not a list.
    async with HttpReranker(api="tei", base_url=server.url) as reranker:
        with pytest.raises(RerankError, match="unexpected response"):
            await reranker.scores(QUERY, ["a"])


async def test_a_busy_server_is_retried_retry_delay_apart(
    server: RerankServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    waits: list[float] = []
    sleep = asyncio.sleep

    async def recorded(seconds: float) -> None:
        waits.append(seconds)
        await sleep(0)

    monkeypatch.setattr("ragflow_config._http.asyncio.sleep", recorded)
    server.busy = 2
    async with HttpReranker(base_url=server.root, retry_delay=0) as reranker:
        assert await reranker.scores(QUERY, PASSAGES) == [0.0, 3.0, 5.0]
    assert len(server.requests) == 3
    assert waits == [0, 0]  # retry_delay 0: no backoff at all


async def test_no_passages_means_no_request(server: RerankServer) -> None:
    async with HttpReranker(base_url=server.root) as reranker:
        assert await reranker.scores(QUERY, []) == []
    assert server.requests == []
