"""A small git repository whose pipeline file changes between two commits: main with
``chunk_size: 256``, and a checked-out branch ``pr`` with ``chunk_size: 128``; six files
of one topic each and a judged query per topic, so that `eval` has something to measure."""

from __future__ import annotations

import random
import subprocess
import textwrap
from pathlib import Path

TOPICS = {
    "cats.md": "cats sleep purr whiskers kitten mouse nap",
    "dogs.md": "dogs bark leash puppy fetch walk bone",
    "tea.md": "tea green brew kettle leaves cup steep",
    "rain.md": "rain clouds storm umbrella thunder wet drizzle",
    "bikes.md": "bikes pedal wheel chain saddle gear ride",
    "bread.md": "bread flour yeast oven dough crust knead",
}
FILLER = [
    "the",
    "a",
    "of",
    "and",
    "to",
    "in",
    "is",
    "it",
    "that",
    "for",
    "on",
    "with",
    "as",
    "was",
    "by",
    "at",
    "from",
    "this",
    "be",
    "or",
]
QUERIES = """\
queries:
  - {id: q1, query: cats purr whiskers, relevant: [cats.md]}
  - {id: q2, query: dogs fetch bone, relevant: [dogs.md]}
  - {id: q3, query: brew green tea, relevant: [tea.md]}
  - {id: q4, query: storm thunder umbrella, relevant: [rain.md]}
  - {id: q5, query: pedal the bikes, relevant: [bikes.md]}
  - {id: q6, query: knead dough yeast, relevant: [bread.md]}
"""


def pipeline_text(chunk_size: int, store: str = "{type: qdrant, parameters: {path: store}}") -> str:
    return textwrap.dedent(f"""\
        version: 1
        vector_stores:
          store: {store}
        embeddings:
          model: {{type: hashing, parameters: {{dimensions: 64}}}}
        embedding_cache: {{}}
        knowledge_bases:
          - name: notes
            sources: [{{path: corpus}}]
            chunker: {{type: approx_token, parameters: {{chunk_size: {chunk_size}, overlap: 0}}}}
            embedding: model
            vector_store: store
            collection: notes
            evaluation: {{queries: queries.yaml, k: 3}}
        """)


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)
    return done.stdout.decode().strip()


def repository(tmp_path: Path, store: str | None = None) -> Path:
    """main: chunk_size 256; branch `pr`, checked out: chunk_size 128. Stores and cache ignored."""
    repo = tmp_path / "repo"
    (repo / "corpus").mkdir(parents=True)
    draw = random.Random(7)
    for name, words in TOPICS.items():
        topic = words.split()
        text = " ".join(
            draw.choice(topic) if draw.random() < 0.3 else draw.choice(FILLER) for _ in range(400)
        )
        (repo / "corpus" / name).write_text(text + "\n", encoding="utf-8")
    (repo / "queries.yaml").write_text(QUERIES, encoding="utf-8")
    extra = {} if store is None else {"store": store}
    (repo / "pipeline.yaml").write_text(pipeline_text(256, **extra), encoding="utf-8")
    (repo / ".gitignore").write_text("store/\n.cache/\n", encoding="utf-8")
    git(repo, "init", "--quiet", "--initial-branch=main")
    git(repo, "config", "user.email", "test@example.com")
    git(repo, "config", "user.name", "test")
    git(repo, "add", ".")
    git(repo, "commit", "--quiet", "-m", "main: chunk_size 256")
    git(repo, "checkout", "--quiet", "-b", "pr")
    (repo / "pipeline.yaml").write_text(pipeline_text(128, **extra), encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", "pr: chunk_size 128")
    return repo
