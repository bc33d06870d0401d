"""`run` reports the chunks MiniLM reads only in part: in its summary and in `--json`.

The same long text, cut by `approx_token` (one token per 4 bytes) into chunks
longer than MiniLM's window of 256 word pieces, then by `token` (counted in
MiniLM's own word pieces): the first run reports them truncated, the second
none, and the count is what MiniLM's own tokenizer says of the stored chunks.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ragflow_config.cli import main
from ragflow_config.embedding import MiniLMEmbeddingModel

# Words of several word pieces each: 1,000 bytes hold far more than 250 of MiniLM's pieces.
TEXT = "\n\n".join(
    " ".join(f"xylophonic{i}quasar{j} zygomorphic{j}" for j in range(40)) for i in range(8)
)

PIPELINE = """\
version: 1
vector_stores:
  local: {{type: qdrant, parameters: {{path: store}}}}
embeddings:
  minilm: {{type: minilm}}
knowledge_bases:
  - name: notes
    sources: [{{path: docs}}]
    parsers: [{{type: text}}]
    chunker: {chunker}
    embedding: minilm
    vector_store: local
    collection: notes
"""


def run(tmp_path: Path, chunker: str, capsys: pytest.CaptureFixture[str]) -> tuple[dict, str]:
    """A fresh index's summary as text, then (reset and indexed again) its report as JSON."""
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(PIPELINE.format(chunker=chunker), encoding="utf-8")
    capsys.readouterr()
    assert main(["run", str(pipeline), "--workers", "0"]) == 0
    out, err = capsys.readouterr()
    assert main(["reset", str(pipeline), "notes", "--yes"]) == 0
    capsys.readouterr()
    assert main(["run", str(pipeline), "--workers", "0", "--json"]) == 0
    [report] = json.loads(capsys.readouterr().out)["knowledge_bases"]
    return report, out + err


def test_run_counts_the_chunks_longer_than_the_models_window(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "long.txt").write_text(TEXT, encoding="utf-8")
    tokenizer = MiniLMEmbeddingModel.load_tokenizer()

    report, text = run(
        tmp_path, "{type: approx_token, parameters: {chunk_size: 256, overlap: 0}}", capsys
    )
    assert report["chunks_written"] > 1
    [change] = report["changes"]
    assert report["chunks_truncated"] == change["truncated"] > 0
    assert f", {report['chunks_truncated']} truncated" in text
    assert "use the `recursive`, `token` or `heading` chunker" in text

    # What MiniLM's tokenizer says of the stored chunks: the count is exact.
    assert (
        main(["search", str(tmp_path / "pipeline.yaml"), "notes", "x", "--json", "--top-k", "50"])
        == 0
    )
    hits = json.loads(capsys.readouterr().out)
    hits = hits["hits"] if isinstance(hits, dict) else hits
    texts = {hit["chunk"]["content"]["text"] for hit in hits}
    assert len(texts) == report["chunks_written"]
    long = sum(len(tokenizer.encode(t).ids) > MiniLMEmbeddingModel.window for t in texts)
    assert long == report["chunks_truncated"]

    report, text = run(tmp_path, "{type: token, parameters: {overlap: 0}}", capsys)
    assert report["chunks_truncated"] == 0
    assert "truncated" not in text
