"""Upgrading re-indexes nothing that would come out the same.

A parameter added to a component after collections were built with it
(`added_later`) is left out of the run fingerprint at its default, which
keeps the component's old output; set to anything else, it re-indexes.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ragflow_config.pipeline import Pipeline
from ragflow_config.pipeline._run import fingerprint

# The fingerprint of the pipeline below as ragflow-config computed it at
# ca7b170, before approx_token had `boundaries` and pdf/image had `ocr`.
BEFORE_THE_NEW_PARAMETERS = {"chunker": "05ddfce6b4316e95", "parsers": "7e919e42b0a7ecc8"}
# The chunker part with the token and recursive chunkers at adbf17c, before they had
# `boundaries`.
TOKEN_CHUNKERS_BEFORE = {"token": "7cd3432c09e998c7", "recursive": "802a9ae70c09d974"}


def pipeline(
    tmp_path: Path,
    chunker: str = "",
    pdf: str = "",
    chunker_type: str = "approx_token",
    parsers: str = "",
) -> Pipeline:
    parsers = parsers or f"[{{type: pdf{pdf}}}, {{type: image}}, {{type: text}}]"
    (tmp_path / "docs").mkdir(exist_ok=True)
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        f"""version: 1
vector_stores:
  local: {{type: qdrant, parameters: {{path: ./q}}}}
embeddings:
  h: {{type: hashing, parameters: {{dimensions: 64}}}}
knowledge_bases:
  - name: docs
    sources: [{{path: docs}}]
    parsers: {parsers}
    chunker: {{type: {chunker_type}, parameters: {{chunk_size: 200{chunker}}}}}
    embedding: h
    vector_store: local
    collection: docs
"""
    )
    return Pipeline.load(path)


async def prints(pipe: Pipeline) -> dict[str, str]:
    async with pipe.build() as built:
        return fingerprint(built.indexing["docs"])


async def test_new_parameters_at_their_defaults_keep_the_old_fingerprint(tmp_path: Path) -> None:
    found = await prints(pipeline(tmp_path))
    assert {part: found[part] for part in BEFORE_THE_NEW_PARAMETERS} == BEFORE_THE_NEW_PARAMETERS
    explicit = await prints(
        pipeline(tmp_path, ", boundaries: greedy", ", parameters: {ocr: never}")
    )
    assert explicit == found


async def test_new_parameters_set_otherwise_change_their_part(tmp_path: Path) -> None:
    default = await prints(pipeline(tmp_path))
    content_defined = await prints(pipeline(tmp_path, chunker=", boundaries: content_defined"))
    assert content_defined["chunker"] != default["chunker"]
    assert content_defined["parsers"] == default["parsers"]
    ocr = await prints(pipeline(tmp_path, pdf=", parameters: {ocr: auto}"))
    assert ocr["parsers"] != default["parsers"]
    assert ocr["chunker"] == default["chunker"]


@pytest.mark.parametrize("chunker_type", list(TOKEN_CHUNKERS_BEFORE))
async def test_token_chunkers_keep_their_fingerprint_until_boundaries_is_set(
    tmp_path: Path, chunker_type: str
) -> None:
    default = await prints(pipeline(tmp_path, chunker_type=chunker_type))
    assert default["chunker"] == TOKEN_CHUNKERS_BEFORE[chunker_type]
    greedy = await prints(pipeline(tmp_path, ", boundaries: greedy", chunker_type=chunker_type))
    assert greedy == default
    content_defined = await prints(
        pipeline(tmp_path, ", boundaries: content_defined", chunker_type=chunker_type)
    )
    assert content_defined["chunker"] != default["chunker"]


# The embedding part of a minilm knowledge base as ragflow-config computed it at
# 89ddba7, when only the model's class, name and dimensions counted.
MINILM_BEFORE = "9e3d396575a2b3d2"


def minilm_pipeline(tmp_path: Path, parameters: str) -> Pipeline:
    (tmp_path / "docs").mkdir(exist_ok=True)
    path = tmp_path / "pipeline.yaml"
    path.write_text(
        f"""version: 1
vector_stores:
  local: {{type: qdrant, parameters: {{path: ./q}}}}
embeddings:
  m: {{type: minilm, parameters: {{{parameters}}}}}
knowledge_bases:
  - name: docs
    sources: [{{path: docs}}]
    chunker: {{type: approx_token}}
    embedding: m
    vector_store: local
    collection: docs
"""
    )
    return Pipeline.load(path)


async def test_a_model_setting_that_changes_vectors_changes_the_embedding_part(
    tmp_path: Path,
) -> None:
    default = await prints(minilm_pipeline(tmp_path, ""))
    assert default["embedding"] == MINILM_BEFORE
    # Truncating at 128 word pieces gives other vectors for longer chunks: stored
    # ones must be neither kept as current nor reused.
    shorter = await prints(minilm_pipeline(tmp_path, "max_length: 128"))
    assert shorter["embedding"] != default["embedding"]
    # Two other values are two other fingerprints, not one "changed" mark.
    shortest = await prints(minilm_pipeline(tmp_path, "max_length: 64"))
    assert shortest["embedding"] not in (shorter["embedding"], default["embedding"])
    assert {k: v for k, v in shorter.items() if k != "embedding"} == {
        k: v for k, v in default.items() if k != "embedding"
    }
    # Batching and threads change how vectors are made, not what they are.
    batching = await prints(minilm_pipeline(tmp_path, "batch_size: 8, threads: 1"))
    assert batching == default
    explicit_default = await prints(minilm_pipeline(tmp_path, "max_length: 256"))
    assert explicit_default == default


# The parsers part of an `html` + `text` knowledge base as ragflow-config computed it at
# fa45ec9, before `html` chose article content with trafilatura (issue 54).
HTML_BEFORE_TRAFILATURA = "18772aef76346576"


async def test_html_knowledge_bases_are_re_indexed_once_as_their_text_changed(
    tmp_path: Path,
) -> None:
    # main_content is deliberately not added_later: every page's text changes (trafilatura
    # on articles; form content, escaped lines and cell spacing by markup too).
    default = await prints(pipeline(tmp_path, parsers="[{type: html}, {type: text}]"))
    markup = await prints(
        pipeline(
            tmp_path, parsers="[{type: html, parameters: {main_content: markup}}, {type: text}]"
        )
    )
    assert default["parsers"] != HTML_BEFORE_TRAFILATURA
    assert markup["parsers"] not in (HTML_BEFORE_TRAFILATURA, default["parsers"])
    assert default["chunker"] == markup["chunker"]
