"""Components whose extra is not installed are reported by `validate`, all at once, before a run."""

from __future__ import annotations

import importlib.util
from importlib.metadata import metadata
from pathlib import Path
from typing import ClassVar

import pytest

from ragflow_config import ConfigError
from ragflow_config.pipeline import Pipeline, Registry, default_registry
from ragflow_config.pipeline._registry import KINDS
from ragflow_config.pipeline._validate import check_file
from ragflow_config.rag import QdrantStore, TextParser


class OCRParser(TextParser):
    """Stands for a parser of an extra this machine lacks."""

    requires: ClassVar[dict[str, str]] = {"no_such_ocr_engine": "ocr"}


class ServerStore(QdrantStore):
    """Stands for a store of another extra this machine lacks."""

    requires: ClassVar[dict[str, str]] = {"no_such_client.aio": "server"}


PIPELINE = """\
version: 1
vector_stores:
  remote:
    type: server_store
embeddings:
  model: {type: hashing}
knowledge_bases:
  - name: scans
    sources: [{path: docs}]
    parsers:
      - type: text
      - type: ocr
    embedding: model
    vector_store: remote
    collection: scans
"""


@pytest.fixture
def registry() -> Registry:
    registry = Registry.from_entry_points()  # not the shared default: it would keep these
    registry.register("parser", "ocr", OCRParser)
    registry.register("vector_store", "server_store", ServerStore)
    return registry


def test_every_missing_extra_is_reported_at_its_type_with_one_install_line(
    tmp_path: Path, registry: Registry
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "scan.txt").write_text("words", encoding="utf-8")
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE, encoding="utf-8")

    _, issues = check_file(path, registry)

    fix = "install every missing extra at once: pip install 'ragflow-config[ocr,server]'"
    assert [(issue.line, issue.path, issue.message) for issue in issues] == [
        (
            4,
            "vector_stores.remote.type",
            f"'server_store' needs no_such_client.aio (extra server), which is not installed; {fix}",
        ),
        (
            12,
            "knowledge_bases[0].parsers[1].type",
            f"'ocr' needs no_such_ocr_engine (extra ocr), which is not installed; {fix}",
        ),
    ]
    with pytest.raises(ConfigError):  # so `run` stops before it writes anything
        Pipeline.load(path, registry)


def test_every_built_in_requirement_is_installed_here_and_named_by_its_extra() -> None:
    """The `requires` of built-ins are real modules, under extras the package declares."""
    extras = metadata("ragflow-config").get_all("Provides-Extra") or []
    registry = default_registry()
    declared = {
        (module, extra)
        for kind in KINDS
        for component_type in registry.types(kind)
        for module, extra in component_type.cls.requires.items()
    }
    assert {extra for _, extra in declared} >= {"rag", "minilm", "qdrant", "milvus"}
    for module, extra in declared:
        assert extra in extras, f"{module}: ragflow-config has no extra {extra!r}"
        assert importlib.util.find_spec(module) is not None, module


OCR_PIPELINE = """\
version: 1
vector_stores:
  local: {type: qdrant, parameters: {path: store}}
embeddings:
  model: {type: hashing}
knowledge_bases:
  - name: scans
    sources: [{path: docs}]
    parsers:
      - type: pdf
        parameters: {ocr: auto}
      - type: image
    embedding: model
    vector_store: local
    collection: scans
"""


def test_the_ocr_extra_is_named_where_a_parser_would_run_ocr(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The image parser (ocr never, the default) needs no OCR engine; the pdf one does."""
    from ragflow_config.rag._parsers import _ocr

    monkeypatch.setattr(_ocr, "OCR_MODULE", "no_such_ocr_engine")
    (tmp_path / "docs").mkdir()
    path = tmp_path / "pipeline.yaml"
    path.write_text(OCR_PIPELINE, encoding="utf-8")

    _, issues = check_file(path, default_registry())

    assert [(issue.line, issue.path, issue.message) for issue in issues] == [
        (
            10,
            "knowledge_bases[0].parsers[0].type",
            "'pdf' needs no_such_ocr_engine (extra ocr), which is not installed; "
            "install every missing extra at once: pip install 'ragflow-config[ocr]'",
        )
    ]


def test_the_ocr_engine_is_installed_here_under_the_extra_it_names() -> None:
    from ragflow_config.rag._parsers._ocr import OCR_EXTRA, OCR_MODULE

    assert OCR_EXTRA in (metadata("ragflow-config").get_all("Provides-Extra") or [])
    assert importlib.util.find_spec(OCR_MODULE) is not None
