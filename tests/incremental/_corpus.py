"""A generated corpus and pipeline files on disk for the incremental-indexing tests."""

from __future__ import annotations

import os
import random
import textwrap
from pathlib import Path

WORDS = [
    "river",
    "mountain",
    "cloud",
    "engine",
    "harbor",
    "lantern",
    "orchard",
    "signal",
    "copper",
    "meadow",
    "falcon",
    "garden",
    "silver",
    "thunder",
    "canyon",
    "marble",
    "ember",
    "willow",
    "beacon",
    "glacier",
    "quartz",
    "prairie",
    "compass",
    "voyage",
    "anchor",
    "summit",
    "lagoon",
    "cedar",
    "ivory",
    "saddle",
    "tundra",
    "walnut",
    "zephyr",
]


def paragraph(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words)) + "."


def write_corpus(root: Path, files: int, seed: int = 7) -> dict[str, str]:
    """``files`` Markdown files of 1 to ~8 chunks each (at chunk_size 64)."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    written = {}
    for index in range(files):
        body = "\n\n".join(paragraph(rng, rng.randint(20, 60)) for _ in range(rng.randint(1, 6)))
        relative = f"part{index % 3}/doc{index:03d}.md"
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"# Document {index}\n\n{body}\n", encoding="utf-8")
        written[relative] = body
    return written


def write_pipeline(
    path: Path,
    *,
    store_path: Path,
    corpus: Path,
    chunk_size: int = 64,
    store_type: str = "qdrant",
    embedding_type: str = "hashing",
    prune: bool = True,
    metadata_filter: str = "",
    extra_store_parameters: str = "",
    max_delete_fraction: float = 0.5,
    parser_type: str = "text",
    retrieval: str = "",
) -> Path:
    path.write_text(
        textwrap.dedent(f"""\
        version: 1
        vector_stores:
          store:
            type: {store_type}
            parameters:
              path: {store_path}
              {extra_store_parameters}
        embeddings:
          model:
            type: {embedding_type}
            parameters: {{dimensions: 64}}
        knowledge_bases:
          - name: docs
            sources: [{{path: {os.path.relpath(corpus, path.parent)}}}]
            parsers: [{{type: {parser_type}}}]
            chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 8}}}}
            embedding: model
            vector_store: store
            collection: docs
            prune: {str(prune).lower()}
            max_delete_fraction: {max_delete_fraction}
            {metadata_filter}
            {retrieval}
        """),
        encoding="utf-8",
    )
    return path
