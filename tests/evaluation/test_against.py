"""`eval FILE --against REF`: the file at a git ref beside the working tree, each with its own index."""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import pytest
from _git_repository import QUERIES, git, pipeline_text, repository

from ragflow_config.cli import main
from ragflow_config.evaluation import (
    EvaluationResult,
    compare,
    comparison_verdict,
    format_comparison_markdown,
)
from ragflow_config.evaluation._against import embedded_locations, evaluation_spec
from ragflow_config.evaluation._metrics import METRICS, mean_metrics
from ragflow_config.evaluation._results import QueryResult
from ragflow_config.pipeline import default_registry
from ragflow_config.pipeline._spec import EmbeddingCacheSpec, PipelineSpec


def snapshot(folder: Path) -> dict[str, tuple[str, int]]:
    """Every file under ``folder``: its content's digest and its modification time."""
    return {
        str(path.relative_to(folder)): (
            hashlib.sha256(path.read_bytes()).hexdigest(),
            path.stat().st_mtime_ns,
        )
        for path in sorted(folder.rglob("*"))
        if path.is_file()
    }


def cache_entries(repo: Path) -> dict[str, int]:
    """The embedding cache's entries, by name, with their inode: a rewritten entry has a new one."""
    return {path.name: path.stat().st_ino for path in (repo / ".cache/embeddings").glob("*.npy")}


def eval_json(capsys: pytest.CaptureFixture[str], *args: str) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["eval", *args, "--json"]) == 0
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_the_branch_is_compared_with_the_ref_in_both_columns_with_p_values(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    file = str(repo / "pipeline.yaml")
    commit = git(repo, "rev-parse", "main")
    capsys.readouterr()
    assert main(["eval", file, "--against", "main"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0] == f"notes: main ({commit[:12]}) against the working tree"
    assert lines[1] == "6 queries, k = 3"
    assert lines[2].split() == ["metric", "main", "working", "tree", "difference", "p"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[3:11]}
    assert list(rows) == [
        "recall@3",
        "precision@3",
        "mrr@3",
        "map@3",
        "map_uncut",
        "ndcg@3",
        "ndcg_exp@3",
        "hit_rate@3",
    ]
    for values in rows.values():
        assert all(re.fullmatch(r"[+-]?\d\.\d{4}", value) for value in values[:4])
    assert lines[11].startswith("p: paired randomisation test, two-sided, exact over all 64")

    # The base column is main's file, sources and all, measured on its own: the same
    # numbers as `run` and `eval` in a checkout of main give.
    main_copy = tmp_path / "main-copy"
    main_copy.mkdir()
    archive = subprocess.run(["git", "-C", str(repo), "archive", "main"], capture_output=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(main_copy, filter="data")
    assert main(["run", str(main_copy / "pipeline.yaml"), "--workers", "0"]) == 0
    alone = eval_json(capsys, str(main_copy / "pipeline.yaml"))
    [main_alone] = alone["results"]["notes"].values()
    against = eval_json(capsys, file, "--against", "main")
    base = against["results"]["notes"]["base"]
    head = against["results"]["notes"]["working_tree"]
    assert base["metrics"] == main_alone["metrics"]
    # chunk_size 128 ranks other chunks first: the two columns differ.
    assert base["metrics"] != head["metrics"]
    assert against["against"] == {"ref": "main", "commit": commit, "file": "pipeline.yaml"}
    metrics = against["comparisons"]["notes"]["metrics"]
    assert metrics["mrr"]["difference"] == pytest.approx(
        head["metrics"]["mrr"] - base["metrics"]["mrr"]
    )
    assert 0 < metrics["mrr"]["p_value"] <= 1


GOLDEN_MARKDOWN = """\
### Retrieval quality: `pipeline.yaml` against `main` (`COMMIT`)

#### `notes`

6 queries, k = 3

| metric | base | this branch | change | p-value | significant? |
|:---|---:|---:|---:|---:|:---:|
| recall@3 | 1.0000 | 1.0000 | +0.0000 | 1.0000 | no |
| precision@3 | 0.3333 | 0.3333 | +0.0000 | 1.0000 | no |
| mrr@3 | 0.9167 | 0.8056 | -0.1111 | 0.5000 | no |
| map@3 | 0.9167 | 0.8056 | -0.1111 | 0.5000 | no |
| map_uncut | 0.9167 | 0.8056 | -0.1111 | 0.5000 | no |
| ndcg@3 | 0.9385 | 0.8552 | -0.0833 | 0.5000 | no |
| ndcg_exp@3 | 0.9385 | 0.8552 | -0.0833 | 0.5000 | no |
| hit_rate@3 | 1.0000 | 1.0000 | +0.0000 | 1.0000 | no |

p-value: paired randomisation test, two-sided, exact over all 64 sign patterns; \
significant: p < 0.05. ndcg: linear gain (trec_eval's ndcg_cut); ndcg_exp: gain 2^grade - 1; \
map: trec_eval's map_cut; map_uncut: trec_eval's map (whole ranking).

**Verdict: no significant change** (p ≥ 0.05 for every metric).
"""


def test_markdown_is_a_pull_request_comment_the_same_every_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    commit = git(repo, "rev-parse", "main")
    outputs = []
    for _ in range(2):
        capsys.readouterr()
        assert (
            main(["eval", str(repo / "pipeline.yaml"), "--against", "main", "--format", "markdown"])
            == 0
        )
        outputs.append(capsys.readouterr().out)
    assert outputs[0] == outputs[1]
    assert outputs[0].replace(commit[:12], "COMMIT") == GOLDEN_MARKDOWN


@pytest.mark.parametrize("where", ["relative", "absolute"])
def test_the_served_collection_is_never_created_nor_touched(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    served = "store" if where == "relative" else str(tmp_path / "served-store")
    repo = repository(tmp_path, store=f"{{type: qdrant, parameters: {{path: '{served}'}}}}")
    folder = repo / served
    file = str(repo / "pipeline.yaml")
    capsys.readouterr()
    assert main(["eval", file, "--against", "main"]) == 0
    assert not folder.exists()  # never opened: neither side's store is the file's own

    for branch in ("main", "pr"):  # what main serves, then what the branch would
        git(repo, "checkout", "--quiet", branch)
        assert main(["run", file, "--workers", "0"]) == 0
    before = snapshot(folder)
    assert main(["eval", file, "--against", "main"]) == 0
    assert snapshot(folder) == before
    assert not [p for p in (folder / "collection").iterdir() if "__eval_" in p.name]


def test_a_server_store_serves_on_while_both_sides_use_collections_of_their_own(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    pgvector_dsn: str,
) -> None:
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (extra: pgvector)")
    monkeypatch.setenv("PGVECTOR_DSN", pgvector_dsn)
    repo = repository(tmp_path, store="{type: pgvector}")
    for branch, size in (("main", 256), ("pr", 128)):
        git(repo, "checkout", "--quiet", branch)
        text = pipeline_text(size, "{type: pgvector}").replace(
            "collection: notes", "collection: served_against"
        )
        (repo / "pipeline.yaml").write_text(text, encoding="utf-8")
        git(repo, "commit", "--quiet", "-am", f"{branch}: its own table")
    file = str(repo / "pipeline.yaml")

    def tables() -> dict[str, list[tuple[object, ...]]]:
        with psycopg.connect(pgvector_dsn) as connection:
            names = [
                row[0]
                for row in connection.execute(
                    "SELECT tablename FROM pg_tables WHERE tablename LIKE 'served_against%'"
                )
            ]
            return {
                name: connection.execute(
                    f'SELECT document_id, chunk_index, chunk FROM "{name}" ORDER BY 1, 2'
                ).fetchall()
                for name in names
            }

    git(repo, "checkout", "--quiet", "main")
    assert main(["run", file, "--workers", "0"]) == 0  # what main serves
    git(repo, "checkout", "--quiet", "pr")
    served = tables()
    assert list(served) == ["served_against"]
    document = eval_json(capsys, file, "--against", "main")
    assert document["collections"]["base"]["notes"].startswith("served_against__eval_")
    assert tables() == served  # untouched, and every evaluation table dropped


def test_each_side_has_its_own_collection_and_they_are_dropped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    document = eval_json(capsys, str(repo / "pipeline.yaml"), "--against", "main")
    collections = document["collections"]
    base, head = collections["base"]["notes"], collections["head"]["notes"]
    commit = git(repo, "rev-parse", "main")
    assert re.fullmatch(rf"notes__eval_{commit[:8]}[0-9a-f]{{6}}", base)
    assert re.fullmatch(r"notes__eval_[0-9a-f]{14}", head)
    assert base != head
    again = eval_json(capsys, str(repo / "pipeline.yaml"), "--against", "main")
    # A run of its own each time: two jobs evaluating one version at once never share one.
    assert again["collections"]["base"]["notes"] != base


def test_the_embedding_cache_is_reused_by_both_sides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = repository(tmp_path)
    file = str(repo / "pipeline.yaml")
    temporary = tmp_path / "tmp"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    capsys.readouterr()
    assert main(["eval", file, "--against", "main"]) == 0
    assert not list(temporary.iterdir())  # the checkout and both sides' stores are gone
    first = cache_entries(repo)
    assert first  # the working tree's cache folder, both sides' texts
    assert main(["eval", file, "--against", "main"]) == 0
    assert cache_entries(repo) == first  # nothing embedded again, nothing rewritten


def test_the_base_costs_nothing_when_main_was_built_before(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    file = str(repo / "pipeline.yaml")
    git(repo, "checkout", "--quiet", "main")
    assert main(["run", file, "--workers", "0"]) == 0
    main_texts = cache_entries(repo)
    git(repo, "checkout", "--quiet", "pr")
    capsys.readouterr()
    assert main(["eval", file, "--against", "main"]) == 0
    after = cache_entries(repo)
    # main's vectors all came from the cache; the branch embedded only its new chunks.
    assert after.items() >= main_texts.items()
    assert len(after) > len(main_texts)
    assert main(["run", file, "--workers", "0"]) == 0  # the branch's own run: nothing new
    assert cache_entries(repo) == after


def test_a_ref_that_does_not_exist_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    capsys.readouterr()
    assert main(["eval", str(repo / "pipeline.yaml"), "--against", "origin/nowhere"]) == 2
    error = capsys.readouterr().err
    assert "error: 'origin/nowhere' names no commit in" in error
    assert "fetch-depth: 0" in error
    assert main(["eval", str(repo / "pipeline.yaml"), "--against", "nowhere", "--json"]) == 2
    message = json.loads(capsys.readouterr().out)["error"]["message"]
    assert message.startswith("'nowhere' names no commit")


def test_a_file_missing_at_the_ref_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    (repo / "new.yaml").write_text(pipeline_text(64), encoding="utf-8")
    capsys.readouterr()
    assert main(["eval", str(repo / "new.yaml"), "--against", "main"]) == 2
    error = capsys.readouterr().err
    commit = git(repo, "rev-parse", "main")
    assert f"error: new.yaml did not exist at main ({commit[:12]})" in error


def test_outside_a_repository_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.md").write_text("cats", encoding="utf-8")
    (tmp_path / "queries.yaml").write_text(QUERIES, encoding="utf-8")
    (tmp_path / "pipeline.yaml").write_text(pipeline_text(64), encoding="utf-8")
    capsys.readouterr()
    assert main(["eval", str(tmp_path / "pipeline.yaml"), "--against", "main"]) == 2
    assert "is not in a git repository" in capsys.readouterr().err


def test_an_invalid_file_at_the_ref_is_named_by_ref_and_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    git(repo, "checkout", "--quiet", "main")
    text = (repo / "pipeline.yaml").read_text().replace("chunk_size: 256", "chunk_size: -1")
    (repo / "pipeline.yaml").write_text(text, encoding="utf-8")
    git(repo, "commit", "--quiet", "-am", "broken")
    git(repo, "checkout", "--quiet", "pr")
    capsys.readouterr()
    # An invalid pipeline file is a configuration error, at any ref.
    assert main(["eval", str(repo / "pipeline.yaml"), "--against", "main"]) == 2
    assert re.search(r"^main:pipeline\.yaml:\d+:\d+: ", capsys.readouterr().err, re.M)


def test_markdown_needs_against_and_not_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = repository(tmp_path)
    file = str(repo / "pipeline.yaml")
    capsys.readouterr()
    assert main(["eval", file, "--format", "markdown"]) == 2
    assert "--against" in capsys.readouterr().err
    assert main(["eval", file, "--against", "main", "--format", "markdown", "--json"]) == 2


def test_a_server_store_keeps_its_settings_and_gets_evaluation_collections(
    tmp_path: Path,
) -> None:
    spec = PipelineSpec.model_validate(
        {
            "version": 1,
            "vector_stores": {
                "pg": {"type": "pgvector"},
                "es": {"type": "elasticsearch", "parameters": {"ca_certs": "certs/ca.pem"}},
                "lite": {"type": "milvus_lite", "parameters": {"uri": "/srv/data/served.db"}},
                "server": {"type": "milvus_lite", "parameters": {"uri": "http://milvus:19530"}},
            },
            "embeddings": {"m": {"type": "hashing"}},
            "knowledge_bases": [
                {"name": n, "embedding": "m", "vector_store": n, "collection": "docs"}
                for n in ("pg", "es", "lite", "server")
            ]
            + [
                {
                    "name": "inline",
                    "embedding": "m",
                    "vector_store": {"type": "qdrant", "parameters": {"path": "/srv/qdrant"}},
                    "collection": "docs",
                }
            ],
        }
    )
    registry = default_registry()
    cache = EmbeddingCacheSpec(path="/work/.cache/embeddings")
    rewritten = evaluation_spec(
        spec, tag="abc", stores=tmp_path / "stores", cache=cache, registry=registry
    )
    assert {kb.collection for kb in rewritten.knowledge_bases} == {"docs__eval_abc"}
    stores = rewritten.vector_stores
    assert stores["pg"] == spec.vector_stores["pg"]
    assert stores["es"] == spec.vector_stores["es"]  # a CA bundle is no store location
    assert stores["server"] == spec.vector_stores["server"]
    assert stores["lite"].parameters["uri"] == str(tmp_path / "stores" / "lite" / "served.db")
    assert rewritten.embedding_cache == cache
    places = embedded_locations(rewritten, Path("/elsewhere"), registry)
    assert len(places) == 2  # Milvus Lite and the inline Qdrant, both moved
    assert all(place.is_relative_to(tmp_path / "stores") for place in places)
    assert [p for p in embedded_locations(spec, Path("/x"), registry)] == [
        Path("/srv/data/served.db"),
        Path("/srv/qdrant"),
    ]


def result(**values: list[float]) -> EvaluationResult:
    """Per-query values of the named metrics (every other metric 0), k = 3."""
    n = len(next(iter(values.values())))
    rows = [
        QueryResult(
            f"q{i}", f"query {i}", 1, {m: values[m][i] if m in values else 0.0 for m in METRICS}, []
        )
        for i in range(n)
    ]
    return EvaluationResult(3, rows, mean_metrics([row.metrics for row in rows]))


def test_the_verdict_names_what_changed_significantly() -> None:
    found, lost = result(recall=[1.0] * 8), result(recall=[0.0] * 8)
    assert comparison_verdict(compare(found, found), 3, 8) == (
        "**Verdict: no significant change** (p ≥ 0.05 for every metric)."
    )
    assert comparison_verdict(compare(found, lost), 3, 8) == (
        "**Verdict: worse.** recall@3 -1.0000 (p = 0.0078)."
    )
    assert comparison_verdict(compare(lost, found), 3, 8) == (
        "**Verdict: better.** recall@3 +1.0000 (p = 0.0078)."
    )
    left = result(recall=[1.0] * 8, mrr=[0.5] * 8)
    right = result(recall=[0.5] * 8, mrr=[1.0] * 8)
    assert comparison_verdict(compare(left, right), 3, 8) == (
        "**Verdict: mixed.** Better: mrr@3 +0.5000 (p = 0.0078). "
        "Worse: recall@3 -0.5000 (p = 0.0078)."
    )
    few = comparison_verdict(compare(result(recall=[1.0] * 5), result(recall=[0.0] * 5)), 3, 5)
    assert few == (
        "**Verdict: no significant change** (p ≥ 0.05 for every metric); "
        "with 5 queries no change can be significant: judge more."
    )


def test_markdown_cells_stay_whole() -> None:
    text = format_comparison_markdown(
        result(recall=[1.0]), result(recall=[0.0]), "a|b", "two\nlines"
    )
    assert "| metric | a\\|b | two lines | change | p-value | significant? |" in text
