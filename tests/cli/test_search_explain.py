"""``search --explain`` on a hybrid knowledge base names, for every hit, both sides' ranks and
the matched terms; ``--json`` carries the same explain record."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ragflow_config.cli import main

PIPELINE = """\
version: 1
vector_stores:
  disk: {type: qdrant, parameters: {path: store}}
embeddings:
  model: {type: hashing, parameters: {dimensions: 64}}
knowledge_bases:
  - name: pets
    sources: [{path: docs, metadata: {shelf: a}}]
    embedding: model
    vector_store: disk
    collection: pets
    retrieval: {mode: hybrid}
"""
NOTES = {
    "cats.md": "Cats sleep on warm windows, and sleeping cats purr.",
    "dogs.md": "Dogs chase the cats of the garden.",
    "fish.md": "Goldfish swim slowly in a warm pond.",
}


@pytest.fixture
def pipeline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    (tmp_path / "docs").mkdir()
    for name, text in NOTES.items():
        (tmp_path / "docs" / name).write_text(text, encoding="utf-8")
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    assert main(["run", str(path), "--workers", "0"]) == 0
    capsys.readouterr()
    return path


def test_search_explain_names_both_sides_and_the_matched_terms(
    pipeline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    query = ["search", str(pipeline), "pets", "sleeping", "cats", "--top-k", "3"]
    assert main(query) == 0
    plain = capsys.readouterr().out
    assert main([*query, "--explain", "--filter", "shelf=a"]) == 0
    out = capsys.readouterr().out
    whys = re.findall(r"^    why: (.*)$", out, re.MULTILINE)
    assert len(whys) == 3 and "why:" not in plain
    for why in whys:
        assert re.search(r"^dense (#\d+ \(-?\d\.\d{4}\)|not returned)", why), why
        assert re.search(r"; lexical (#\d+|not returned)", why), why
        assert re.search(r"; weighted -?\d\.\d{4}; filter \{\"shelf\": \"a\"\}$", why), why
    first = whys[0]  # cats.md: both sides' first, matching both analysed terms
    assert first.startswith("dense #1 (") and "lexical #1 (" in first
    assert re.search(r"\[sleep \d\.\d{3}, cat \d\.\d{3}\]", first), first
    assert [line for line in out.splitlines() if not line.startswith("    why: ")] == [
        line for line in plain.splitlines()
    ]  # the same hits, in the same order, with the same scores


def test_search_explain_json_carries_the_explain_record(
    pipeline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", str(pipeline), "pets", "warm", "pond", "--json", "--explain"]) == 0
    printed = json.loads(capsys.readouterr().out)
    hits = printed["hits"] if isinstance(printed, dict) else printed  # {"hits"} since check-env
    explain = hits[0]["explain"]
    assert hits[0]["chunk"]["source"] == "fish.md"
    assert explain["mode"] == "hybrid" and explain["fusion"]["method"] == "weighted"
    assert explain["dense"]["rank"] == 1 and explain["lexical"]["rank"] == 1
    assert [t["term"] for t in explain["lexical"]["terms"]] == ["pond", "warm"]
    assert explain["metadata_filter"] is None
