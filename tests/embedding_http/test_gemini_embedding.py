"""GeminiEmbeddingModel against a live local server speaking Gemini's native API, through
the google-genai SDK."""

from __future__ import annotations

import base64
import logging

import pytest

from ragflow_config._errors import EmbeddingError, UnsupportedInputError
from ragflow_config.credential import GeminiCredential
from ragflow_config.embedding import GeminiEmbeddingModel
from ragflow_config.message import Base64Source, DataBlock, URLSource

from ._gemini_server import GeminiServer, Reply, gemini_error

KEY = "gm-native-0123456789"


def block(media_type: str, data: bytes = b"media") -> DataBlock:
    encoded = base64.b64encode(data).decode()
    return DataBlock(source=Base64Source(data=encoded, media_type=media_type))


def make_model(server: GeminiServer, model: str, **options: object) -> GeminiEmbeddingModel:
    options = {"dimensions": 8, "base_url": server.url, "retry_delay": 0.0, **options}
    return GeminiEmbeddingModel(credential=GeminiCredential(api_key=KEY), model=model, **options)


def path(model: str) -> str:
    return f"/v1/models/{model}:batchEmbedContents"


async def test_texts_go_in_batches_with_the_key_dimensions_and_task_type(
    gemini_server: GeminiServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    texts = [f"text number {i}" for i in range(5)]
    model = GeminiEmbeddingModel(
        model="gemini-embedding-001",
        dimensions=8,
        base_url=gemini_server.url,
        batch_size=2,
        task_type="RETRIEVAL_DOCUMENT",
    )
    async with model:
        assert not model.supports_multimodal
        response = await model(texts)

    contents = [{"parts": [{"text": text}], "role": "user"} for text in texts]
    assert response.embeddings == [gemini_server.vector_for(c, 8) for c in contents]
    sent = gemini_server.requests
    assert sorted(len(seen.body["requests"]) for seen in sent) == [1, 2, 2]
    for seen in sent:
        assert seen.path == path("gemini-embedding-001")
        assert seen.headers["x-goog-api-key"] == KEY
        for request in seen.body["requests"]:
            assert request["model"] == "models/gemini-embedding-001"
            assert request["outputDimensionality"] == 8
            assert request["taskType"] == "RETRIEVAL_DOCUMENT"


async def test_the_text_model_refuses_media(gemini_server: GeminiServer) -> None:
    async with make_model(gemini_server, "gemini-embedding-001") as model:
        with pytest.raises(UnsupportedInputError, match="text only"):
            await model(["a", block("image/png")])
    assert gemini_server.requests == []


async def test_the_multimodal_model_embeds_each_input_as_its_own_content_within_the_limits(
    gemini_server: GeminiServer,
) -> None:
    inputs: list[str | DataBlock] = [
        "a caption",
        *[block("image/png", f"image {i}".encode()) for i in range(8)],
        block("video/mp4"),
        block("video/mp4", b"second video"),
        block("audio/mpeg"),
        block("application/pdf"),
    ]
    async with make_model(gemini_server, "gemini-embedding-2", batch_size=100) as model:
        assert model.supports_multimodal
        response = await model(inputs)

    def content(item: str | DataBlock) -> dict[str, object]:
        if isinstance(item, str):
            return {"parts": [{"text": item}]}
        source = item.source
        assert isinstance(source, Base64Source)
        return {"parts": [{"inline_data": {"data": source.data, "mime_type": source.media_type}}]}

    assert response.embeddings == [gemini_server.vector_for(content(i), 8) for i in inputs]
    for seen in gemini_server.requests:
        assert seen.path == path("gemini-embedding-2")
        types = [
            part["inline_data"]["mime_type"].partition("/")[0] if "inline_data" in part else "text"
            for request in seen.body["requests"]
            for part in request["content"]["parts"]
        ]
        assert types.count("image") <= 6
        assert types.count("video") <= 1
        assert types.count("audio") <= 1
        assert types.count("application") <= 1  # the PDF
    # Filled greedily in order: the caption and 6 images; 2 images and a video; the second
    # video, the audio and the PDF.
    assert sorted(len(seen.body["requests"]) for seen in gemini_server.requests) == [3, 3, 7]


def test_the_multimodal_limits_count_twenty_inputs(gemini_server: GeminiServer) -> None:
    model = make_model(gemini_server, "gemini-embedding-2")
    assert model.batch_accepts(["t"] * 19, "t")
    assert not model.batch_accepts(["t"] * 20, "t")
    assert not model.batch_accepts([block("application/pdf")], block("application/pdf"))
    assert not model.batch_accepts([block("audio/wav")], block("audio/mpeg"))
    assert model.batch_accepts([block("audio/wav")], block("application/pdf"))


async def test_a_url_source_is_refused_naming_the_block(gemini_server: GeminiServer) -> None:
    url_block = DataBlock(
        source=URLSource(url="https://example.com/cat.png", media_type="image/png")
    )
    async with make_model(gemini_server, "gemini-embedding-2") as model:
        with pytest.raises(
            UnsupportedInputError, match=r"image/png block at https://example.com/cat.png"
        ):
            await model(["a", url_block])
    assert gemini_server.requests == []


async def test_429_and_5xx_are_retried_after_the_servers_retry_after(
    gemini_server: GeminiServer, caplog: pytest.LogCaptureFixture
) -> None:
    now = {"Retry-After": "0"}
    failures = {
        0: Reply(429, gemini_error(429, "RESOURCE_EXHAUSTED", "quota"), now),
        1: Reply(503, gemini_error(503, "UNAVAILABLE", "overloaded"), now),
    }
    gemini_server.reply = lambda number, body: failures.get(number)
    # A backoff of its own would wait 1 s or more: the server's Retry-After says 0.
    model = make_model(gemini_server, "gemini-embedding-001", max_retries=2, retry_delay=2.0)
    with caplog.at_level(logging.WARNING):
        async with model:
            response = await model(["hello"])
    assert len(gemini_server.requests) == 3
    assert response.embeddings == [
        gemini_server.vector_for({"parts": [{"text": "hello"}], "role": "user"}, 8)
    ]
    retries = [r.getMessage() for r in caplog.records if "retrying in" in r.getMessage()]
    assert len(retries) == 2
    assert all("retrying in 0.0s" in message for message in retries), retries
    assert "HTTP 429" in retries[0] and "HTTP 503" in retries[1]


async def test_retries_stop_at_max_retries_and_name_the_service(
    gemini_server: GeminiServer,
) -> None:
    gemini_server.reply = lambda number, body: Reply(
        500, gemini_error(500, "INTERNAL", f"broken; key {KEY}")
    )
    async with make_model(gemini_server, "gemini-embedding-001", max_retries=1) as model:
        with pytest.raises(EmbeddingError) as raised:
            await model(["hello"])
    assert len(gemini_server.requests) == 2
    message = str(raised.value)
    assert "Gemini embeddings (gemini-embedding-001)" in message
    assert "HTTP 500" in message and "gave up after 2 attempts" in message
    assert KEY not in message


async def test_a_client_error_is_not_retried(gemini_server: GeminiServer) -> None:
    gemini_server.reply = lambda number, body: Reply(
        400, gemini_error(400, "INVALID_ARGUMENT", "bad dimensionality")
    )
    async with make_model(gemini_server, "gemini-embedding-001", max_retries=3) as model:
        with pytest.raises(EmbeddingError, match=r"HTTP 400.*bad dimensionality"):
            await model(["hello"])
    assert len(gemini_server.requests) == 1


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        ({"embeddings": [{"values": [0.5] * 8}]}, "2 texts but the response holds 1 vectors"),
        ({"embeddings": [{"values": [0.5] * 7}] * 2}, "a vector of 7 dimensions"),
        ({"embeddings": "none"}, "unexpected response: embeddings"),
        (b"<html>busy</html>", "not JSON"),
    ],
    ids=["one vector for two inputs", "vectors of the wrong length", "no list", "not JSON"],
)
async def test_a_bad_answer_is_refused(
    gemini_server: GeminiServer, answer: object, problem: str
) -> None:
    gemini_server.reply = lambda number, body: Reply(200, answer)
    async with make_model(gemini_server, "gemini-embedding-001") as model:
        with pytest.raises(EmbeddingError, match="Gemini embeddings") as raised:
            await model(["a", "b"])
    assert problem in str(raised.value)


async def test_an_openai_compatible_base_url_is_read_as_the_native_root(
    gemini_server: GeminiServer,
) -> None:
    assert GeminiEmbeddingModel.Parameters(model="m", dimensions=8).base_url == (
        "https://generativelanguage.googleapis.com"
    )
    model = make_model(
        gemini_server, "gemini-embedding-001", base_url=f"{gemini_server.url}/v1beta/openai/"
    )
    async with model:
        await model(["hello"])
    [seen] = gemini_server.requests
    assert seen.path == path("gemini-embedding-001")


async def test_a_refused_connection_is_retried_then_named(unused_tcp_port: int) -> None:
    model = GeminiEmbeddingModel(
        credential=GeminiCredential(api_key=KEY),
        model="gemini-embedding-001",
        dimensions=8,
        base_url=f"http://127.0.0.1:{unused_tcp_port}",
        max_retries=1,
        retry_delay=0.0,
    )
    async with model:
        with pytest.raises(EmbeddingError, match=r"ConnectError.*gave up after 2 attempts"):
            await model(["hello"])


async def test_a_slow_server_times_out(gemini_server: GeminiServer) -> None:
    gemini_server.reply = lambda number, body: Reply(200, {"embeddings": []}, delay=2)
    async with make_model(
        gemini_server, "gemini-embedding-001", max_retries=1, timeout=0.2
    ) as model:
        with pytest.raises(EmbeddingError, match=r"no answer within 0.2 s.*after 2 attempts"):
            await model(["x"])
    assert len(gemini_server.requests) == 2
