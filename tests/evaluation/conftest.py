"""What the `eval` command tests run on: a corpus, judged queries and a pipeline file."""

from __future__ import annotations

import textwrap
from pathlib import Path

DOCUMENTS = {
    "cats.md": "Cats sleep twelve to sixteen hours a day and purr when content.",
    "dogs.md": "Dogs bark at strangers and love long walks in the park.",
    "tea.md": "Green tea is brewed with water below boiling for two minutes.",
}

PIPELINE = """\
version: 1
vector_stores:
  store: {{type: qdrant, parameters: {{path: store-{name}}}}}
embeddings:
  model: {{type: hashing, parameters: {{dimensions: {dimensions}}}}}
knowledge_bases:
  - name: notes
    embedding: model
    vector_store: store
    collection: notes
"""


def write_project(
    folder: Path,
    name: str,
    knowledge_base: str,
    *,
    dimensions: int,
    documents: dict[str, str],
    queries: str,
) -> Path:
    """``folder/name.yaml``: the knowledge base ``notes`` with the keys ``knowledge_base``
    adds (YAML), over ``documents`` in ``folder/corpus`` and ``queries`` in
    ``folder/queries.yaml``, into a Qdrant folder of its own."""
    corpus = folder / "corpus"
    corpus.mkdir(exist_ok=True)
    for file, text in documents.items():
        (corpus / file).write_text(text, encoding="utf-8")
    (folder / "queries.yaml").write_text(queries, encoding="utf-8")
    path = folder / f"{name}.yaml"
    keys = textwrap.indent(textwrap.dedent(knowledge_base), "    ")
    path.write_text(PIPELINE.format(name=name, dimensions=dimensions) + keys, encoding="utf-8")
    return path
