"""The `retrieval:` block is checked by `validate`, at its line, before a run writes anything."""

from __future__ import annotations

from pathlib import Path

import pytest

from ragflow_config.pipeline import _validate
from ragflow_config.pipeline._registry import Registry
from ragflow_config.pipeline._validate import check_file
from ragflow_config.rag import QdrantStore

PIPELINE = """\
version: 1
vector_stores:
  store: {store}
embeddings:
  model: {{type: hashing}}
knowledge_bases:
  - name: kb
    embedding: model
    vector_store: store
    collection: kb
    retrieval:
      mode: hybrid
{more}"""
QDRANT = "{type: qdrant, parameters: {location: ':memory:'}}"


class DenseOnlyStore(QdrantStore):
    """A plugin store without a lexical side (every built-in store has one)."""

    supports_lexical = False


def issues(
    tmp_path: Path, store: str = QDRANT, more: str = "", registry: Registry | None = None
) -> list[str]:
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE.format(store=store, more=more), encoding="utf-8")
    _, found = check_file(path, registry)
    return [f"{issue.line}:{issue.column}: {issue.path}: {issue.message}" for issue in found]


def test_a_valid_block_passes(tmp_path: Path) -> None:
    more = "      fusion: {method: weighted, dense_weight: 0.7, lexical_weight: 0.3}\n"
    assert issues(tmp_path, more=more) == []


def test_a_store_without_a_lexical_side_is_an_error_at_the_mode(tmp_path: Path) -> None:
    registry = Registry.from_entry_points()  # not the shared default: it would keep the plugin
    registry.register("vector_store", "dense_only", DenseOnlyStore)
    store = "{type: dense_only, parameters: {location: ':memory:'}}"
    assert issues(tmp_path, store, registry=registry) == [
        "12:13: knowledge_bases[0].retrieval.mode: retrieval mode 'hybrid' needs a store with a "
        "lexical side, and 'dense_only' has none; use one of elasticsearch, milvus_lite, "
        "mongodb, pgvector, qdrant, qdrant_edge, or mode dense"
    ]


@pytest.mark.parametrize("store", ["elasticsearch", "mongodb"])
def test_elasticsearch_and_mongodb_have_a_lexical_side(tmp_path: Path, store: str) -> None:
    parameters = {"elasticsearch": "{hosts: 'http://localhost:9200'}", "mongodb": "{database: rag}"}
    assert issues(tmp_path, f"{{type: {store}, parameters: {parameters[store]}}}") == []


def test_unknown_keys_and_bad_values_are_errors_at_their_lines(tmp_path: Path) -> None:
    more = "      fusion: {method: borda}\n      analyzer: {language: klingon}\n"
    found = issues(tmp_path, more=more)
    assert [line.split(": ")[1] for line in found] == [
        "knowledge_bases[0].retrieval.fusion.method",
        "knowledge_bases[0].retrieval.analyzer.language",
    ]
    assert found[0].startswith("13:") and found[1].startswith("14:")


def test_a_missing_stemmer_is_reported_with_its_install_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    installed = _validate.missing
    monkeypatch.setattr(  # as on a machine without PyStemmer
        _validate,
        "missing",
        lambda requires: dict(requires) if "Stemmer" in requires else installed(requires),
    )
    assert issues(tmp_path) == [
        "12:13: knowledge_bases[0].retrieval.mode: retrieval mode 'hybrid' stems words with "
        "PyStemmer (module Stemmer, extra hybrid), which is not installed; "
        "pip install 'ragflow-config[hybrid]'"
    ]
    assert issues(tmp_path, more="      analyzer: {stemming: false}\n") == []
