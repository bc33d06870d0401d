"""Small pipeline files for the action's tests: valid ones and an invalid one."""

from __future__ import annotations

from pathlib import Path

VALID = """\
version: 1
vector_stores:
  local:
    type: {store}
embeddings:
  hashing:
    type: hashing
    parameters: {{dimensions: 64}}
{cache}knowledge_bases:
  - name: docs
    sources:
      - path: docs
    parsers:
      - type: text
    chunker:
      type: approx_token
      parameters: {{chunk_size: {chunk_size}, overlap: 32}}
    embedding: hashing
    vector_store: local
    collection: docs
"""

# Line 4 names an unknown key; line 3's item lacks the required ones.
INVALID = """\
version: 1
knowledge_bases:
  - name: docs
    chunk: 3
"""


STORES = {
    "qdrant": "qdrant\n    parameters: {path: .qdrant}",
    # pymongo alone: the lightest of the stores' client libraries to install.
    "mongodb": "mongodb\n    parameters: {database: kb}",
}


def valid_pipeline(
    folder: Path,
    name: str = "kb.yaml",
    *,
    chunk_size: int = 256,
    cache: str = "",
    store: str = "qdrant",
) -> Path:
    """A valid pipeline file in ``folder`` (with its docs/ folder); ``cache``: its embedding_cache line."""
    (folder / "docs").mkdir(parents=True, exist_ok=True)
    (folder / "docs" / "a.md").write_text("Knowledge bases reviewed in pull requests.\n")
    path = folder / name
    path.write_text(
        VALID.format(
            chunk_size=chunk_size, cache=f"{cache}\n" if cache else "", store=STORES[store]
        )
    )
    return path


def invalid_pipeline(folder: Path, name: str = "broken.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(INVALID)
    return path
