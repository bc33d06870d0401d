"""DashScopeEmbeddingModel against a live local server speaking DashScope's native API."""

from __future__ import annotations

import logging

import pytest

from ragflow_config._errors import EmbeddingError, UnsupportedInputError
from ragflow_config.credential import DashScopeCredential, MissingSecretError
from ragflow_config.embedding import DashScopeEmbeddingModel
from ragflow_config.message import Base64Source, DataBlock, URLSource

from ._dashscope_server import DashScopeServer, Reply, dashscope_error

KEY = "sk-dashscope-0123456789"
TEXT_PATH = "/api/v1/services/embeddings/text-embedding/text-embedding"
MULTIMODAL_PATH = "/api/v1/services/embeddings/multimodal-embedding/multimodal-embedding"


def image(data: str = "aWltYWdl") -> DataBlock:
    return DataBlock(source=Base64Source(data=data, media_type="image/png"))


def video() -> DataBlock:
    return DataBlock(source=URLSource(url="https://example.com/v.mp4", media_type="video/mp4"))


def make_model(server: DashScopeServer, model: str, **options: object) -> DashScopeEmbeddingModel:
    options = {"dimensions": 8, **options}
    return DashScopeEmbeddingModel(
        credential=DashScopeCredential(api_key=KEY), model=model, base_url=server.url, **options
    )


async def test_texts_go_in_batches_of_ten_with_the_key_and_come_back_in_order(
    dashscope_server: DashScopeServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    texts = [f"text number {i}" for i in range(25)]
    model = DashScopeEmbeddingModel(
        base_url=dashscope_server.url, model="text-embedding-v4", dimensions=8
    )
    async with model:
        response = await model(texts)

    assert response.embeddings == [dashscope_server.vector_for(text, 8) for text in texts]
    sent = dashscope_server.requests
    assert sorted(len(seen.body["input"]["texts"]) for seen in sent) == [5, 10, 10]
    for seen in sent:
        assert seen.path == TEXT_PATH
        assert seen.headers["authorization"] == f"Bearer {KEY}"
        assert seen.body["model"] == "text-embedding-v4"
        assert seen.body["parameters"]["dimension"] == 8
    assert response.usage is not None and response.usage.tokens == 3 * 25


async def test_a_multimodal_model_embeds_text_and_images_within_its_limits(
    dashscope_server: DashScopeServer,
) -> None:
    # qwen3-vl-embedding takes at most 5 images and 1 video per request.
    inputs: list[str | DataBlock] = ["a caption", *[image(f"aW1n{i}") for i in range(7)], video()]
    async with make_model(dashscope_server, "qwen3-vl-embedding") as model:
        assert model.supports_multimodal
        response = await model(inputs)

    contents = [c for seen in dashscope_server.requests for c in seen.body["input"]["contents"]]
    assert {seen.path for seen in dashscope_server.requests} == {MULTIMODAL_PATH}
    for seen in dashscope_server.requests:
        kinds = [next(iter(c)) for c in seen.body["input"]["contents"]]
        assert kinds.count("image") <= 5 and kinds.count("video") <= 1
    assert len(dashscope_server.requests) == 2
    assert {"text": "a caption"} in contents
    assert {"image": "data:image/png;base64,aW1n0"} in contents
    assert {"video": "https://example.com/v.mp4"} in contents
    expected = [
        {"text": "a caption"},
        *[{"image": f"data:image/png;base64,aW1n{i}"} for i in range(7)],
        {"video": "https://example.com/v.mp4"},
    ]
    assert response.embeddings == [dashscope_server.vector_for(c, 8) for c in expected]


async def test_a_text_model_refuses_data_blocks_and_a_video_needs_a_url(
    dashscope_server: DashScopeServer,
) -> None:
    async with make_model(dashscope_server, "text-embedding-v4") as model:
        assert not model.supports_multimodal
        with pytest.raises(UnsupportedInputError):
            await model([image()])
    inline_video = DataBlock(source=Base64Source(data="eA==", media_type="video/mp4"))
    async with make_model(dashscope_server, "tongyi-embedding-vision-plus") as model:
        with pytest.raises(ValueError, match="video from a URL only"):
            await model([inline_video])
    assert dashscope_server.requests == []


async def test_a_rejected_key_fails_at_once_and_never_leaks(
    dashscope_server: DashScopeServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    dashscope_server.reply = lambda number, body: Reply(
        401, dashscope_error("InvalidApiKey", f"Invalid API-key provided: {KEY}")
    )
    async with make_model(dashscope_server, "text-embedding-v4") as model:
        with pytest.raises(EmbeddingError) as caught:
            await model(["hello"])
    assert len(dashscope_server.requests) == 1
    assert "HTTP 401: InvalidApiKey: Invalid API-key provided: ***" in str(caught.value)
    assert isinstance(caught.value, RuntimeError)  # as AgentScope's model raises
    assert KEY not in caplog.text and KEY not in str(caught.value)


async def test_throttling_and_server_errors_are_retried(
    dashscope_server: DashScopeServer, caplog: pytest.LogCaptureFixture
) -> None:
    dashscope_server.reply = lambda number, body: (
        Reply(429, dashscope_error("Throttling", "Requests rate limit exceeded"))
        if number == 0
        else Reply(500, dashscope_error("InternalError", "try again"))
        if number == 1
        else None
    )
    async with make_model(dashscope_server, "text-embedding-v4", retry_delay=0) as model:
        response = await model(["hello"])
    assert response.embeddings == [dashscope_server.vector_for("hello", 8)]
    assert len(dashscope_server.requests) == 3
    assert "Throttling" in caplog.text

    dashscope_server.reply = lambda number, body: Reply(
        503, dashscope_error("ServiceUnavailable", "busy")
    )
    async with make_model(
        dashscope_server, "text-embedding-v4", retry_delay=0, max_retries=1
    ) as model:
        with pytest.raises(EmbeddingError, match="busy \\(gave up after 2 attempts\\)"):
            await model(["hello"])


async def test_vectors_of_another_length_are_refused(dashscope_server: DashScopeServer) -> None:
    # Without `dimension` sent, the server answers its default length (8 here).
    model = make_model(dashscope_server, "text-embedding-v4", dimensions=16, send_dimensions=False)
    async with model:
        with pytest.raises(EmbeddingError, match="a vector of 8 dimensions, but dimensions is 16"):
            await model(["hello"])
    assert "dimension" not in dashscope_server.requests[0].body.get("parameters", {})


async def test_vectors_whose_indexes_do_not_match_the_inputs_are_refused(
    dashscope_server: DashScopeServer,
) -> None:
    twice_first = [{"text_index": 0, "embedding": [0.0] * 8}] * 2
    dashscope_server.reply = lambda number, body: Reply(
        200, {"output": {"embeddings": twice_first}, "usage": {"total_tokens": 2}}
    )
    async with make_model(dashscope_server, "text-embedding-v4") as model:
        with pytest.raises(EmbeddingError, match=r"vectors have indexes \[0, 0\]"):
            await model(["one", "two"])


def test_defaults_and_compatible_mode_urls() -> None:
    model = DashScopeEmbeddingModel(
        credential=DashScopeCredential(api_key=KEY), model="text-embedding-v4", dimensions=1024
    )
    assert model.parameters.base_url == "https://dashscope.aliyuncs.com/api/v1"
    assert (model.batch_size, model.dimensions, model.model) == (10, 1024, "text-embedding-v4")
    # A config written for the OpenAI-compatible mode keeps working: its native root is beside it.
    intl = DashScopeEmbeddingModel.Parameters(
        model="m",
        dimensions=8,
        base_url="https://dashscope-intl.aliyuncs.com/compatible-mode/v1/",
    )
    assert intl.base_url == "https://dashscope-intl.aliyuncs.com/api/v1"


def test_the_cards_list_the_multimodal_models_with_their_types() -> None:
    cards = {card.name: card for card in DashScopeEmbeddingModel.list_models()}
    assert set(cards) == {
        "text-embedding-v3",
        "text-embedding-v4",
        "multimodal-embedding-v1",
        "qwen2.5-vl-embedding",
        "qwen3-vl-embedding",
        "tongyi-embedding-vision-flash",
        "tongyi-embedding-vision-plus",
    }
    assert cards["text-embedding-v4"].input_types == ["text/plain"]
    assert "video/mp4" in cards["qwen3-vl-embedding"].input_types
    assert cards["multimodal-embedding-v1"].supported_dimensions is None


@pytest.mark.parametrize("variable", ["DASHSCOPE_API_KEY", "TEAM_DASHSCOPE_KEY"])
def test_missing_key_names_the_variable_at_construction(
    variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(variable, raising=False)
    with pytest.raises(MissingSecretError, match=variable):
        DashScopeEmbeddingModel(model="text-embedding-v4", dimensions=1024, api_key_env=variable)
