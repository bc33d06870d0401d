"""Top-level `x-...` keys hold YAML anchors for reuse; other unknown keys stay errors."""

from __future__ import annotations

from pathlib import Path

from ragflow_config.pipeline import Pipeline
from ragflow_config.pipeline._validate import check_file

ANCHORED = """\
version: 1
x-store: &store
  type: qdrant
  parameters: {location: ":memory:"}
vector_stores:
  first: *store
  second: *store
embeddings:
  model: {type: hashing}
knowledge_bases:
  - {name: a, embedding: model, vector_store: first, collection: a}
  - {name: b, embedding: model, vector_store: second, collection: b}
"""


def test_an_anchor_under_an_x_key_is_reused(tmp_path: Path) -> None:
    path = tmp_path / "anchored.yaml"
    path.write_text(ANCHORED, encoding="utf-8")
    spec = Pipeline.load(path).spec
    assert spec.vector_stores["first"] == spec.vector_stores["second"]
    assert spec.vector_stores["first"].parameters == {"location": ":memory:"}


def test_other_unknown_top_level_keys_are_still_errors(tmp_path: Path) -> None:
    path = tmp_path / "typo.yaml"
    path.write_text(ANCHORED.replace("x-store", "xstore"), encoding="utf-8")
    _, issues = check_file(path)
    assert [(i.line, i.column, i.path) for i in issues] == [(2, 1, "xstore")]
    assert "unknown key 'xstore'" in issues[0].message
