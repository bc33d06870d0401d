"""DashScopeEmbeddingModel: the OpenAI-compatible model, configured for DashScope."""

from __future__ import annotations

import pytest

from ragflow_config.credential import DashScopeCredential, MissingSecretError
from ragflow_config.embedding import DashScopeEmbeddingModel

from ._server import EmbeddingServer

KEY = "sk-dashscope-0123456789"


async def test_key_from_environment_sent_to_the_configured_url(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", KEY)
    texts = [f"text {i}" for i in range(25)]
    model = DashScopeEmbeddingModel(base_url=server.url, model="text-embedding-v4", dimensions=8)
    async with model:
        response = await model(texts)

    assert response.embeddings == [server.vector_for(text) for text in texts]
    assert sorted(len(seen.body["input"]) for seen in server.requests) == [5, 10, 10]
    for seen in server.requests:
        assert seen.path == "/v1/embeddings"
        assert seen.headers["authorization"] == f"Bearer {KEY}"
        assert seen.body["model"] == "text-embedding-v4"
        assert seen.body["dimensions"] == 8


async def test_reference_constructor_with_a_credential(server: EmbeddingServer) -> None:
    model = DashScopeEmbeddingModel(
        credential=DashScopeCredential(api_key=KEY),
        model="text-embedding-v4",
        dimensions=1024,
        base_url=server.url,
    )
    async with model:
        await model(["hello"])
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert len(server.requests[0].body["input"]) == 1


def test_defaults_to_dashscope_compatible_mode() -> None:
    model = DashScopeEmbeddingModel(
        credential=DashScopeCredential(api_key=KEY), model="text-embedding-v4", dimensions=1024
    )
    assert model.parameters.base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert model.batch_size == 10
    assert model.dimensions == 1024
    assert model.model == "text-embedding-v4"
    assert not model.supports_multimodal


@pytest.mark.parametrize("variable", ["DASHSCOPE_API_KEY", "TEAM_DASHSCOPE_KEY"])
def test_missing_key_names_the_variable_at_construction(variable: str) -> None:
    with pytest.raises(MissingSecretError, match=variable):
        DashScopeEmbeddingModel(model="text-embedding-v4", dimensions=1024, api_key_env=variable)
