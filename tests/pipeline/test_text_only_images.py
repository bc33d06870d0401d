"""An image among the sources of a text-only model: skipped once, with what would index it.

Real files (a PNG drawn with Pillow, Markdown notes), the hashing model and Qdrant's
local mode, through the command line: the reports, their JSON and the exit codes.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
from PIL import Image

from ragflow_config.cli import main
from ragflow_config.embedding import (
    DashScopeEmbeddingModel,
    GeminiEmbeddingModel,
    HashingEmbeddingModel,
)
from ragflow_config.message import DataBlock
from ragflow_config.pipeline import Pipeline, Registry, RunOptions

PIPELINE = """\
version: 1
vector_stores:
  disk: {{type: qdrant, parameters: {{path: store}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: 32}}}}
knowledge_bases:
  - name: docs
    sources: [{{path: docs}}]
    parsers:
      - type: image{image}
      - type: text
    embedding: model
    vector_store: disk
    collection: docs
"""
WHY = "the model embeds text only (hashing-v1)"
HINT = "turn on OCR (`ocr: auto` on the parser) or use a multimodal model"


def folder(tmp_path: Path, image: str = "") -> Path:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "note.md").write_text("Apples are red.\n", encoding="utf-8")
    Image.new("RGB", (32, 16), "white").save(docs / "photo.png")
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE.format(image=image), encoding="utf-8")
    return path


def outputs(capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    captured = capsys.readouterr()
    return captured.out, captured.err


def test_validate_says_to_turn_on_ocr_or_use_a_multimodal_model(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = folder(tmp_path)
    assert main(["validate", str(pipeline)]) == 0  # valid: advice, not an error
    out, err = outputs(capsys)
    assert out == "1 file(s) valid\n"
    [warning] = err.splitlines()
    assert warning.startswith("warning: ") and warning.endswith("multimodal embedding model")
    assert ":10:9: knowledge_bases[0].parsers[0]: the 'image' parser" in warning
    assert "'image' parser keeps images as images" in warning
    assert "embedding 'model' embeds text only" in warning
    assert "`parameters: {ocr: auto}`, pip install 'ragflow-config[ocr]'" in warning

    assert main(["validate", str(pipeline), "--json"]) == 0
    document = json.loads(outputs(capsys)[0])
    assert document["issues"] == []
    [advice] = document["warnings"]
    assert (advice["line"], advice["path"]) == (10, "knowledge_bases[0].parsers[0]")
    assert advice["message"] in warning


def test_validate_has_no_advice_once_the_image_parser_reads_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = folder(tmp_path, image="\n        parameters: {ocr: auto}")
    assert main(["validate", str(pipeline)]) == 0
    assert outputs(capsys) == ("1 file(s) valid\n", "")


def test_a_model_knows_whether_it_embeds_images_before_it_is_built() -> None:
    """What validate reads, with no credential set: per model name where a provider has both."""
    assert not HashingEmbeddingModel.multimodal_for(HashingEmbeddingModel.Parameters(dimensions=8))
    for provider, multimodal, text in (
        (GeminiEmbeddingModel, "gemini-embedding-2-preview", "gemini-embedding-001"),
        (DashScopeEmbeddingModel, "multimodal-embedding-v1", "text-embedding-v4"),
    ):
        assert provider.multimodal_for(provider.Parameters(model=multimodal, dimensions=8))
        assert not provider.multimodal_for(provider.Parameters(model=text, dimensions=8))


def test_run_reports_the_image_once_as_skipped_with_no_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = folder(tmp_path)
    with caplog.at_level(logging.WARNING):
        assert main(["run", str(pipeline), "--workers", "0"]) == 0
    out, err = outputs(capsys)
    assert caplog.records == []  # not a log warning: a line of the report
    assert err.splitlines() == [
        "docs: add note.md (new file)",
        f"docs: skipped photo.png: {WHY}; {HINT}",
    ]
    assert out.startswith(
        "docs: did add 1, update 0, delete 0; unchanged 0, kept 0, unsupported 0, "
        "empty 0, skipped 1, failed 0; 1 chunk written\n"
    )
    assert "empty photo.png" not in err and "nothing to index" not in err

    # Skipped files keep exit 0 unless --strict, which the skip fails.
    assert main(["run", str(pipeline), "--workers", "0", "--strict"]) == 1
    out, err = outputs(capsys)
    assert err.splitlines() == [f"docs: skipped photo.png: {WHY}; {HINT}"]  # again once

    # Parsed in parser processes too (the default), the same report.
    assert main(["run", str(pipeline), "--workers", "1", "--json"]) == 0
    [kb] = json.loads(outputs(capsys)[0])["knowledge_bases"]
    assert kb["counts"]["skipped"] == 1 and kb["counts"]["empty"] == 0
    [change] = [c for c in kb["changes"] if c["path"] == "photo.png"]
    assert change["action"] == "skipped" and change["reason"] == f"{WHY}; {HINT}"


def test_plan_and_verify_list_the_skip_once_and_pass_unless_strict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    pipeline = folder(tmp_path)
    with caplog.at_level(logging.WARNING):
        # Before any run: parsed, and named once.
        assert main(["plan", str(pipeline)]) == 0
        out, err = outputs(capsys)
        assert f"  skipped     photo.png  ({WHY}; {HINT})\n" in out
        assert out.count("photo.png") == 1 and "photo.png" not in err
        assert "skipped 1" in out
        assert main(["plan", str(pipeline), "--strict"]) == 1
        outputs(capsys)

        # After a run, remembered (issue 52): counted, not named, unless --strict.
        assert main(["run", str(pipeline), "--workers", "0"]) == 0
        outputs(capsys)
        assert main(["plan", str(pipeline)]) == 0
        out, err = outputs(capsys)
        assert "photo.png" not in out + err and "skipped 1" in out
        assert "docs: 1 file yielded nothing when last tried" in out
        assert main(["plan", str(pipeline), "--strict"]) == 1
        assert f"  skipped     photo.png  ({WHY}; {HINT})\n" in outputs(capsys)[0]
        assert main(["verify", str(pipeline)]) == 0
        out, err = outputs(capsys)
        assert out == (
            "docs: 1 documents in sync, 0 drifted, 1 skipped (1 remembered, not parsed again)\n"
        )
        assert main(["verify", str(pipeline), "--strict"]) == 1
        outputs(capsys)
        assert main(["verify", str(pipeline), "--json"]) == 0
        document = json.loads(outputs(capsys)[0])
        assert [(s["status"], s["path"]) for s in document["skipped"]] == [("skipped", "photo.png")]
        assert document["drift"] == []
    assert caplog.records == []


def test_with_ocr_on_an_image_without_text_is_skipped_saying_ocr_found_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pipeline = folder(tmp_path, image="\n        parameters: {ocr: auto}")
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    err = outputs(capsys)[1]
    assert (
        f"docs: skipped photo.png: {WHY} and OCR found no text in it; "
        "a multimodal model would embed it"
    ) in err.splitlines()


class _SeesImages(HashingEmbeddingModel):
    """A multimodal model for the test: an image embeds as the hash of its base64 data."""

    supports_multimodal = True

    @property
    def model(self) -> str:
        return "sees-images-v1"

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        return [
            self.embed_text(item if isinstance(item, str) else str(item.source)) for item in batch
        ]


async def test_a_rebuild_for_a_text_only_model_skips_the_images_and_switches(
    tmp_path: Path,
) -> None:
    """From a multimodal model, which stored the image, to a text-only one: the rebuild
    beside the live collection skips the image, where it would stay blocked missing it."""
    registry = Registry.from_entry_points()
    registry.register("embedding", "sees_images", _SeesImages)
    pipeline = folder(tmp_path)
    text = pipeline.read_text(encoding="utf-8")
    pipeline.write_text(text.replace("type: hashing", "type: sees_images"), encoding="utf-8")
    [kb] = (
        await Pipeline.load(pipeline, registry).run(options=RunOptions(workers=0))
    ).knowledge_bases
    assert kb.count("add") == 2  # the image stored, as an image

    pipeline.write_text(text, encoding="utf-8")  # the hashing model: text only
    [kb] = (
        await Pipeline.load(pipeline, registry).run(options=RunOptions(workers=0))
    ).knowledge_bases
    assert kb.rebuild is not None and kb.rebuild.switched, kb.rebuild
    [skipped] = [c for c in kb.changes if c.path == "photo.png"]
    assert (skipped.action, skipped.reason) == ("skipped", f"{WHY}; {HINT}")
