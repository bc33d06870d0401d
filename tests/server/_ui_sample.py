"""A small hybrid knowledge base to serve the retrieval-testing page from."""

from __future__ import annotations

from pathlib import Path

from ragflow_config.pipeline import Pipeline, RunOptions

TOKEN = "ui-test-token-0123456789abcdef"
NOTES = {
    "cats.md": "# Cats\n\nCats sleep on warm windows, and sleeping cats purr.\n\n"
    "A cat naps sixteen hours a day.",
    "dogs.md": "# Dogs\n\nDogs chase the cats of the garden; the garden dogs bark at cats.",
    "tea.md": "# Tea\n\nGreen tea is brewed with water below boiling for two minutes.",
}
PIPELINE = """\
version: 1
vector_stores:
  disk: {type: qdrant, parameters: {path: store}}
embeddings:
  model: {type: hashing, parameters: {dimensions: 64}}
knowledge_bases:
  - name: pets
    description: Notes on pets & tea.
    sources: [{path: notes}]
    chunker: {type: approx_token, parameters: {chunk_size: 12, overlap: 0}}
    embedding: model
    vector_store: disk
    collection: pets
    metadata_filter: {shelf: a}
    retrieval: {mode: hybrid}
"""


async def sample(folder: Path, mode: str = "hybrid") -> Path:
    """The pipeline file, indexed (with a lexical side unless ``mode`` is dense)."""
    (folder / "notes").mkdir(parents=True)
    for name, text in NOTES.items():
        (folder / "notes" / name).write_text(text, encoding="utf-8")
    path = folder / "pipeline.yaml"
    path.write_text(PIPELINE.replace("mode: hybrid", f"mode: {mode}"), encoding="utf-8")
    await Pipeline.load(path).run(options=RunOptions(workers=0))
    return path
