"""The hashing model, logging every text it embeds from whichever process embeds it, and
pipelines that run it with an embedding cache."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import ClassVar

from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import DataBlock
from ragflow_config.pipeline import Pipeline

Contents = dict[str, dict[str, dict[int, tuple[str, list[float]]]]]


class LoggedHashing(HashingEmbeddingModel):
    """``hashing``, appending ``[pid, text]`` lines to ``text_log`` for each text it embeds.

    Parser processes and Ray tasks share no memory with a test: a file is how
    they tell it what they embedded. ``name`` renames the model alone.
    """

    class Parameters(HashingEmbeddingModel.Parameters):
        # Neither changes a vector: the cache must tell names apart by its key's `model`.
        vector_neutral: ClassVar[frozenset[str]] = (
            HashingEmbeddingModel.Parameters.vector_neutral | {"text_log", "name"}
        )
        text_log: Path | None = None
        name: str = "hashing-v1"

    parameters: Parameters

    @property
    def model(self) -> str:
        return self.parameters.name

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        if self.parameters.text_log is not None:
            with self.parameters.text_log.open("a", encoding="utf-8") as log:
                log.writelines(json.dumps([os.getpid(), text]) + "\n" for text in batch)
        return await super().embed_batch(batch)


def logged(text_log: Path) -> list[tuple[int, str]]:
    """What the models logged: (process id, text), in order."""
    if not text_log.exists():
        return []
    lines = text_log.read_text(encoding="utf-8").splitlines()
    return [(pid, text) for pid, text in map(json.loads, lines)]


def pipeline_file(
    folder: Path,
    corpus: Path,
    *,
    knowledge_bases: tuple[str, ...] = ("docs",),
    model: str = "{dimensions: 64}",
    chunk_size: int = 64,
    cache: bool = True,
    execution: str = "{type: local}",
) -> Path:
    """A pipeline of ``knowledge_bases`` over ``corpus``, each in its own collection of one store.

    ``model`` holds the `logged` model's parameters, which log to ``folder/texts.log``;
    the cache, when on, is ``folder/../cache``.
    """
    folder.mkdir(parents=True, exist_ok=True)
    blocks = "".join(
        textwrap.indent(
            textwrap.dedent(f"""\
            - name: {name}
              sources: [{{path: {corpus}, allow_outside: true}}]
              chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 8}}}}
              embedding: model
              vector_store: store
              collection: {name}
            """),
            "  ",
        )
        for name in knowledge_bases
    )
    parameters = model.rstrip("}") + f", text_log: {folder / 'texts.log'}}}"
    path = folder / "pipeline.yaml"
    path.write_text(
        "version: 1\n"
        "vector_stores:\n  store: {type: qdrant, parameters: {path: store}}\n"
        f"embeddings:\n  model: {{type: logged, parameters: {parameters}}}\n"
        + ("embedding_cache: {path: ../cache}\n" if cache else "")
        + f"execution: {execution}\n"
        + "knowledge_bases:\n"
        + blocks,
        encoding="utf-8",
    )
    return path


async def contents(pipeline: Pipeline) -> Contents:
    """Every knowledge base's chunks: by source path and chunk index, the text and the vector."""
    async with pipeline.build() as built:
        return {
            name: {
                summary.source: {
                    chunk.chunk_index: (chunk.content.text, vector)  # type: ignore[union-attr]
                    for chunk, vector in await kb.document_vectors(summary.document_id)
                }
                for summary in await kb.list_documents()
            }
            for name, kb in built.knowledge_bases.items()
        }


def texts(stored: dict[str, dict[int, tuple[str, list[float]]]]) -> set[str]:
    return {text for chunks in stored.values() for text, _ in chunks.values()}


async def reset(pipeline: Pipeline) -> None:
    """What `ragflow-config kb reset` does to each knowledge base."""
    async with pipeline.build() as built:
        for kb in built.knowledge_bases.values():
            await kb.clear()
