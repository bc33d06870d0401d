"""OpenAICompatibleEmbeddingModel against a live local server."""

from __future__ import annotations

import asyncio
import gc
import logging
from typing import Any

import pytest
from pydantic import ValidationError

from ragflow_config._errors import EmbeddingError
from ragflow_config.credential import OpenAICredential
from ragflow_config.embedding import OpenAICompatibleEmbeddingModel

from ._server import EmbeddingServer, Reply, error_body

KEY = "sk-test-0123456789abcdef"


def make_model(server: EmbeddingServer, **options: Any) -> OpenAICompatibleEmbeddingModel:
    options = {"model": "text-embedding-3-small", "dimensions": 8, **options}
    return OpenAICompatibleEmbeddingModel(base_url=server.url, **options)


async def test_batches_keep_input_order_when_the_server_shuffles(
    server: EmbeddingServer,
) -> None:
    texts = [f"text number {i}" for i in range(10)]
    async with make_model(server, batch_size=3) as model:
        response = await model(texts)

    assert response.embeddings == [server.vector_for(text) for text in texts]
    assert sorted(len(seen.body["input"]) for seen in server.requests) == [1, 3, 3, 3]
    sent = sorted((seen.body["input"] for seen in server.requests), key=lambda b: texts.index(b[0]))
    assert [text for batch in sent for text in batch] == texts
    first = server.requests[0]
    assert first.path == "/v1/embeddings"
    assert first.body["model"] == "text-embedding-3-small"
    assert first.body["encoding_format"] == "float"
    assert "authorization" not in first.headers  # no key configured: none sent


async def test_batches_in_flight_never_exceed_max_concurrency(server: EmbeddingServer) -> None:
    server.hold_until_in_flight = 2  # each request waits until a second one arrives,
    server.linger = 0.1  # then stays long enough for a third to overlap, were it sent
    async with make_model(server, batch_size=1, max_concurrency=2) as model:
        response = await model([f"t{i}" for i in range(8)])

    assert len(response.embeddings) == 8
    assert len(server.requests) == 8
    assert server.max_in_flight == 2


async def test_429_is_retried_after_retry_after(
    server: EmbeddingServer, caplog: pytest.LogCaptureFixture
) -> None:
    server.reply = lambda number, body: (
        Reply(429, error_body("Rate limit reached"), {"Retry-After": "0"}) if number == 0 else None
    )
    async with make_model(server) as model:
        response = await model(["hello"])

    assert response.embeddings == [server.vector_for("hello")]
    assert len(server.requests) == 2
    retries = [r for r in caplog.records if r.name == "ragflow_config.http"]
    assert len(retries) == 1
    assert retries[0].levelno == logging.WARNING
    assert "429" in retries[0].getMessage()
    assert "Rate limit reached" in retries[0].getMessage()


async def test_persistent_500_exhausts_retries(server: EmbeddingServer) -> None:
    server.reply = lambda number, body: Reply(
        500, error_body("The model is overloaded"), {"Retry-After": "0"}
    )
    async with make_model(server, max_retries=2) as model:
        with pytest.raises(EmbeddingError) as caught:
            await model(["hello"])

    assert len(server.requests) == 3
    message = str(caught.value)
    assert "HTTP 500" in message
    assert "The model is overloaded" in message
    assert "gave up after 3 attempts" in message
    assert server.url in message


async def test_401_fails_at_once(server: EmbeddingServer) -> None:
    server.reply = lambda number, body: Reply(401, error_body("Invalid API key"))
    async with make_model(server, max_retries=5) as model:
        with pytest.raises(EmbeddingError, match=r"HTTP 401: Invalid API key"):
            await model(["hello"])
    assert len(server.requests) == 1


async def test_a_public_api_without_a_key_names_the_variable_and_sends_nothing(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    async with OpenAICompatibleEmbeddingModel(
        model="text-embedding-3-small", dimensions=8
    ) as model:
        with pytest.raises(EmbeddingError) as error:
            await model(["hello"])
    assert str(error.value).endswith("no API key; set the environment variable OPENAI_API_KEY")
    assert not caplog.records  # no retries: nothing was sent


async def test_a_401_without_a_key_names_the_variable_the_model_reads(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TEAM_EMBEDDINGS_KEY", raising=False)
    server.reply = lambda number, body: Reply(401, error_body("Missing API key"))
    async with OpenAICompatibleEmbeddingModel(
        base_url=server.url, model="m", dimensions=3, api_key_env="TEAM_EMBEDDINGS_KEY"
    ) as model:
        with pytest.raises(EmbeddingError) as error:
            await model(["hello"])
    assert "HTTP 401: Missing API key" in str(error.value)
    assert str(error.value).endswith("set the environment variable TEAM_EMBEDDINGS_KEY")


async def test_timeout_is_retried(server: EmbeddingServer) -> None:
    server.reply = lambda number, body: Reply(200, {"data": []}, delay=2.0) if number == 0 else None
    async with make_model(server, timeout=0.3) as model:
        response = await model(["slow"])
    assert response.embeddings == [server.vector_for("slow")]
    assert len(server.requests) == 2


async def test_unreachable_server_is_an_embedding_error() -> None:
    model = OpenAICompatibleEmbeddingModel(
        base_url="http://127.0.0.1:9/v1", model="m", dimensions=8, max_retries=1
    )
    async with model:
        with pytest.raises(EmbeddingError, match=r"ConnectError.*gave up after 2 attempts"):
            await model(["hello"])


async def test_vector_of_the_wrong_length_is_an_error(server: EmbeddingServer) -> None:
    server.vector_length = 5
    async with make_model(server, dimensions=8) as model:
        with pytest.raises(EmbeddingError) as caught:
            await model(["hello"])
    message = str(caught.value)
    assert "'text-embedding-3-small'" in message
    assert "5 dimensions" in message
    assert "dimensions is 8" in message


async def test_missing_vectors_are_an_error(server: EmbeddingServer) -> None:
    def drop_one(number: int, body: dict[str, Any]) -> Reply:
        data = [
            {"index": i, "embedding": server.vector_for(text)}
            for i, text in enumerate(body["input"][1:])
        ]
        return Reply(200, {"data": data})

    server.reply = drop_one
    async with make_model(server) as model:
        with pytest.raises(EmbeddingError, match=r"sent 3 texts but the response holds 2 vectors"):
            await model(["a", "b", "c"])


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"<html>gateway</html>", r"HTTP 200 with a body that is not JSON: <html>gateway</html>"),
        ({"data": [{"index": 0}]}, r"unexpected response: data\.0\.embedding is not a list"),
    ],
)
async def test_malformed_success_is_an_error(
    server: EmbeddingServer, body: Any, expected: str
) -> None:
    server.reply = lambda number, request: Reply(200, body)
    async with make_model(server) as model:
        with pytest.raises(EmbeddingError, match=expected):
            await model(["hello"])
    assert len(server.requests) == 1


@pytest.mark.parametrize("send_dimensions", [True, False])
async def test_dimensions_field_sent_only_when_asked(
    server: EmbeddingServer, send_dimensions: bool
) -> None:
    async with make_model(server, dimensions=8, send_dimensions=send_dimensions) as model:
        await model(["hello"])
    body = server.requests[0].body
    assert ("dimensions" in body) is send_dimensions
    if send_dimensions:
        assert body["dimensions"] == 8


async def test_api_key_is_a_bearer_header_and_never_leaks(
    server: EmbeddingServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    # Servers echo a rejected key; the first answer is retried (and logged), the second is fatal.
    server.reply = lambda number, body: (
        Reply(503, error_body(f"upstream refused key {KEY}"), {"Retry-After": "0"})
        if number == 0
        else Reply(401, error_body(f"Incorrect API key provided: {KEY}"))
    )
    model = make_model(server, credential=OpenAICredential(api_key=KEY))
    async with model:
        with pytest.raises(EmbeddingError) as caught:
            await model(["hello"])

    assert [seen.headers["authorization"] for seen in server.requests] == [f"Bearer {KEY}"] * 2
    assert "HTTP 401: Incorrect API key provided: ***" in str(caught.value)
    assert any(r.name == "ragflow_config.http" for r in caplog.records)
    for text in (str(caught.value), repr(caught.value), caplog.text, repr(model.describe())):
        assert KEY not in text


async def test_api_key_read_from_the_named_variable(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MY_EMBEDDING_KEY", KEY)
    async with make_model(server, api_key_env="MY_EMBEDDING_KEY") as model:
        await model(["hello"])
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


async def test_only_the_named_variable_is_read_for_a_key(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The openai SDK reads OPENAI_API_KEY by itself when given no key; a model pointed
    # at another variable must not send that key to whatever server it names.
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("MY_EMBEDDING_KEY", raising=False)
    async with make_model(server, api_key_env="MY_EMBEDDING_KEY") as model:
        await model(["hello"])
    assert "authorization" not in server.requests[0].headers


async def test_client_reopens_after_aclose(server: EmbeddingServer) -> None:
    model = make_model(server)
    async with model:
        await model(["one"])
    await model.aclose()  # closing twice is harmless
    async with model:
        response = await model(["two"])
    assert response.embeddings == [server.vector_for("two")]


def test_parameters_are_validated() -> None:
    with pytest.raises(ValidationError, match="dimensions"):
        OpenAICompatibleEmbeddingModel(model="m")
    with pytest.raises(ValidationError, match="base_url"):
        OpenAICompatibleEmbeddingModel(base_url="api.openai.com/v1", model="m", dimensions=8)
    with pytest.raises(ValidationError, match="api_key"):
        OpenAICompatibleEmbeddingModel(model="m", dimensions=8, api_key=KEY)


@pytest.mark.filterwarnings("ignore::ResourceWarning")
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_model_survives_a_second_event_loop(server: EmbeddingServer) -> None:
    model = make_model(server)
    # Not closed in between: the first loop's connections die with it.
    assert asyncio.run(model(["one"])).embeddings == [server.vector_for("one")]
    assert asyncio.run(model(["two"])).embeddings == [server.vector_for("two")]
    asyncio.run(model.aclose())
    gc.collect()  # report the first loop's abandoned socket here, not in a later test
