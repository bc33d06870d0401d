"""Two tenants' pipelines sharing one store and collection, through the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragflow_config.cli import main

PIPELINE = """\
version: 1
vector_stores:
  shared: {{type: qdrant, parameters: {{path: ../store}}}}
embeddings:
  hashing: {{type: hashing, parameters: {{dimensions: 64}}}}
knowledge_bases:
  - name: handbook
    sources: [{{path: docs}}]
    embedding: hashing
    vector_store: shared
    collection: handbooks
    metadata_filter: {{tenant_id: {tenant}}}
    prune: true
"""


def tenant(root: Path, name: str, files: dict[str, str]) -> Path:
    """A tenant's folder: the same knowledge base name, source folder and collection as the other."""
    folder = root / name
    (folder / "docs").mkdir(parents=True)
    for relative, text in files.items():
        (folder / "docs" / relative).write_text(text, encoding="utf-8")
    pipeline = folder / "pipeline.yaml"
    pipeline.write_text(PIPELINE.format(tenant=name), encoding="utf-8")
    return pipeline


def listing(pipeline: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, str]:
    capsys.readouterr()
    assert main(["list", str(pipeline), "handbook", "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)["documents"]
    return {d["source"]: d["document_id"] for d in listed}


def test_two_tenants_with_the_same_paths_keep_their_own_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = tenant(tmp_path, "a", {f"policy{i}.md": f"Tenant a policy {i}." for i in range(11)})
    b = tenant(tmp_path, "b", {"policy0.md": "Tenant b's own policy."})

    for pipeline in (a, b, a, b):
        assert main(["run", str(pipeline), "--workers", "0"]) == 0

    a_documents = listing(a, capsys)
    assert len(a_documents) == 11
    assert list(listing(b, capsys)) == ["policy0.md"]
    assert main(["plan", str(a)]) == 0  # in sync: b's runs took nothing back
    capsys.readouterr()
    assert main(["search", str(a), "handbook", "policy", "--top-k", "20", "--json"]) == 0
    texts = [hit["chunk"]["content"]["text"] for hit in json.loads(capsys.readouterr().out)["hits"]]
    assert len(texts) == 11 and not any("Tenant b" in text for text in texts)


def test_deleting_another_tenants_document_says_nothing_was_deleted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = tenant(tmp_path, "a", {"only-a.md": "Only tenant a has this file."})
    b = tenant(tmp_path, "b", {"only-b.md": "Only tenant b has this file."})
    for pipeline in (a, b):
        assert main(["run", str(pipeline), "--workers", "0"]) == 0
    [a_id] = listing(a, capsys).values()

    assert main(["delete", str(b), "handbook", a_id]) == 1
    assert "nothing deleted" in capsys.readouterr().err
    assert list(listing(a, capsys).values()) == [a_id]

    assert main(["delete", str(a), "handbook", a_id]) == 0
    assert f"deleted {a_id}" in capsys.readouterr().out
    assert listing(a, capsys) == {}
