"""Credentials in URLs never reach a message, a log line or a repr."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from ragflow_config import EmbeddingError, VectorStoreError
from ragflow_config._redact import redact_url, redact_urls
from ragflow_config.embedding import OpenAICompatibleEmbeddingModel
from ragflow_config.pipeline._validate import check_file
from ragflow_config.rag import ElasticsearchStore, MilvusLiteStore, QdrantStore

SECRET = "sk-test-0123456789abcdef"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pw@host/v1?api_key=k&x=1", "https://host/v1?api_key=***&x=1"),
        ("https://tok@github.com/o/r", "https://github.com/o/r"),
        ("elastic:pw@es:9200", "es:9200"),
        (
            "mongodb+srv://app:p%40ss@c0.example.net/db?retryWrites=true&authSource=admin",
            "mongodb+srv://c0.example.net/db?retryWrites=true&authSource=admin",
        ),
        (
            "https://acct.blob.core.windows.net/c?sv=2024&sig=abc&X-Amz-Signature=z#top",
            "https://acct.blob.core.windows.net/c?sv=2024&sig=***&X-Amz-Signature=***#top",
        ),
        (
            "https://h/v1?apiKey=a&token=b&access_token=c&password=d&client_secret=e&key=f",
            "https://h/v1?apiKey=***&token=***&access_token=***&password=***&client_secret=***"
            "&key=***",
        ),
        # A password pasted unencoded, "/", "?" and "#" in it, is not cut in two.
        ("postgresql://app:a/b?c#d@db:5432/rag", "postgresql://db:5432/rag"),
        # What is not a URL with credentials stays as written.
        ("http://localhost:6333", "http://localhost:6333"),
        ("data/milvus.db", "data/milvus.db"),
        ("/srv/a@b/milvus.db", "/srv/a@b/milvus.db"),
        (":memory:", ":memory:"),
    ],
)
def test_redact_url_drops_userinfo_and_masks_secret_query_values(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_urls_finds_every_url_in_a_message() -> None:
    text = (
        f"at https://h/v1?key={SECRET}: ConnectError: 'http://u:{SECRET}@h:1' failed (https://x/a)."
    )
    assert (
        redact_urls(text)
        == "at https://h/v1?key=***: ConnectError: 'http://h:1' failed (https://x/a)."
    )


async def test_a_key_in_base_url_is_in_no_error_warning_or_repr(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    model = OpenAICompatibleEmbeddingModel(
        base_url=f"http://me:{SECRET}@127.0.0.1:9/v1?api-key={SECRET}",
        model="m",
        dimensions=8,
        max_retries=1,
    )
    async with model:
        with pytest.raises(EmbeddingError) as caught:
            await model(["hello"])

    assert "at http://127.0.0.1:9/v1?api-key=***: ConnectError" in str(caught.value)
    assert any(r.name == "ragflow_config.http" for r in caplog.records)  # the retry warning
    for text in (str(caught.value), caplog.text, repr(model.parameters), model.service):
        assert SECRET not in text


def test_store_names_and_parameters_show_no_credentials() -> None:
    qdrant = QdrantStore(url=f"https://me:{SECRET}@q.example:6333?api_key={SECRET}")
    milvus = MilvusLiteStore(uri=f"https://root:{SECRET}@m.example:19530")
    es = ElasticsearchStore(hosts=[f"https://elastic:{SECRET}@es1:9200", "es2:9200"])

    assert qdrant.store_name == "QdrantStore(https://q.example:6333?api_key=***)"
    assert milvus.store_name == "MilvusLiteStore(https://m.example:19530)"
    assert es.store_name == "ElasticsearchStore(https://es1:9200, es2:9200)"
    for store in (qdrant, milvus, es):
        assert SECRET not in repr(store.parameters)


def test_an_error_quoting_a_url_from_a_client_library_is_redacted() -> None:
    error = VectorStoreError("QdrantStore(q)", f"ConnectError: http://u:{SECRET}@q:6333 refused")
    assert SECRET not in str(error) and SECRET not in error.cause
    assert error.cause == "ConnectError: http://q:6333 refused"


def test_validate_echoes_no_credentials_of_a_url_written_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pipeline.yaml").write_text(
        "version: 1\n"
        "vector_stores:\n"
        f"  remote: {{type: qdrant, parameters: {{url: ['https://me:{SECRET}@q:6333']}}}}\n"
        "embeddings: {model: {type: hashing}}\n"
        "knowledge_bases:\n"
        "  - {name: docs, embedding: model, vector_store: remote, collection: docs}\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(tmp_path)

    _, issues = check_file(tmp_path / "pipeline.yaml")

    assert [str(issue) for issue in issues] == [
        "pipeline.yaml:3:44: vector_stores.remote.parameters.url: ['https://q:6333'] is not "
        "a string or null"
    ]
