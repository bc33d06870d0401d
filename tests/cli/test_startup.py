"""What a command imports before it answers (issue 40): only what it uses.

`--version` and `--help` build the argument parser and nothing else; `validate`
(a pre-commit hook, run on every commit) imports the types its file names, never
the agent, a chat model, a store's client or the runner. Checked by the modules a
fresh interpreter holds after the command, not by time.
"""

from __future__ import annotations

import contextlib
import gc
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from _collector import collector_passes

REPO = Path(__file__).parents[2]

# The command line's own modules may come and go; these are what it must not pay for.
NOT_AT_START_UP = [
    "pydantic",
    "ruamel.yaml",
    "jsonschema",
    "httpx",
    "rich",
    "ragflow_config.pipeline",
    "ragflow_config.rag",
    "ragflow_config.embedding",
]
NOT_FOR_VALIDATE = [
    "ragflow_config.agent",
    "ragflow_config.model._dashscope",
    "ragflow_config.model._openai",
    "ragflow_config.model._ollama",
    "ragflow_config.embedding._dashscope",
    "ragflow_config.rag._parsers.pdf",
    "ragflow_config.rag._stores.milvus",
    "ragflow_config.executors",
    "ragflow_config.rerankers",
    "ragflow_config.pipeline._run",
    "ragflow_config.credential",  # a local store reads no key
    # What only a running RAG middleware uses: its class is loaded for its Parameters.
    "ragflow_config.rag._knowledge_base",
    "ragflow_config.rag._explain",
    "ragflow_config.event",
    "ragflow_config.model",
    "ragflow_config.tool",
    "ragflow_config.middleware._rag.tool",
    "jsonschema",  # a valid file is told so by jsonschema_rs
    "pydantic_settings",
    "dashscope",
    "qdrant_client",
    "onnxruntime",
    "numpy",
    "httpx",
    "rich",
]

# A search of a knowledge base that names no reranker, on a local store.
NOT_FOR_SEARCH = [
    "ragflow_config.rerankers",
    "ragflow_config.credential",
    "pydantic_settings",
    "ragflow_config.agent",
    "ragflow_config.model",
    "ragflow_config.pipeline._run",
    "onnxruntime",
]
SEARCH_PIPELINE = """\
version: 1
vector_stores:
  disk: {type: qdrant, parameters: {path: store}}
embeddings:
  model: {type: hashing, parameters: {dimensions: 64}}
knowledge_bases:
  - name: notes
    sources: [{path: docs}]
    embedding: model
    vector_store: disk
    collection: notes
"""

PROBE = """
import contextlib, io, json, sys
from ragflow_config.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as exit:
        code = exit.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def imported_by(*argv: str) -> tuple[int, set[str]]:
    """The exit code of ``ragflow-config ARGV`` in a fresh interpreter, and every module
    it had imported by the end."""
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    report = json.loads(done.stdout)
    return report["code"], set(report["modules"])


def heavy(modules: set[str], names: list[str]) -> list[str]:
    return sorted(name for name in names if name in modules)


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["run", "--help"]])
def test_the_parser_alone_answers_version_and_help(argv: list[str]) -> None:
    code, modules = imported_by(*argv)
    assert code == 0
    assert heavy(modules, NOT_AT_START_UP) == []


def test_validate_imports_the_types_its_file_names_and_nothing_else() -> None:
    code, modules = imported_by("validate", "pipelines/local.yaml")
    assert code == 0
    assert heavy(modules, NOT_FOR_VALIDATE) == []
    # The file's own types are what it was checked against.
    assert "ragflow_config.rag._stores.qdrant_edge.store" in modules
    assert "ragflow_config.embedding._minilm" in modules
    assert "ragflow_config.middleware._rag.middleware" in modules


def test_an_invalid_file_still_lists_every_registered_type() -> None:
    """Laziness stops at errors: an unknown type is told every name there is."""
    code, modules = imported_by("validate", "tests/pipeline/files/unknown_types.yaml")
    assert code == 2
    assert "ragflow_config.rag._parsers.pdf" in modules


def built(folder: Path) -> Path:
    """SEARCH_PIPELINE in ``folder``, run once."""
    (folder / "docs").mkdir()
    (folder / "docs" / "apples.md").write_text("Apples are red or green.\n", encoding="utf-8")
    pipeline = folder / "pipeline.yaml"
    pipeline.write_text(SEARCH_PIPELINE, encoding="utf-8")
    subprocess.run(
        [sys.executable, "-m", "ragflow_config.cli", "run", "-q", str(pipeline), "--workers", "0"],
        cwd=REPO,
        capture_output=True,
        timeout=120,
        check=True,
    )
    return pipeline


def test_search_imports_its_store_and_model_and_no_reranker(tmp_path: Path) -> None:
    pipeline = built(tmp_path)
    code, modules = imported_by("search", str(pipeline), "notes", "apples")
    assert code == 0
    assert heavy(modules, NOT_FOR_SEARCH) == []
    assert "qdrant_client" in modules  # it did open the store


def test_an_unchanged_run_on_a_local_folder_does_not_import_its_client(tmp_path: Path) -> None:
    """The run before kept the folder's snapshot: nothing to write, nothing to load."""
    pipeline = built(tmp_path)
    code, modules = imported_by("run", "-q", str(pipeline), "--workers", "0")
    assert code == 0
    assert "ragflow_config.pipeline._run" in modules  # it did run
    assert "qdrant_client" not in modules
    (tmp_path / "docs" / "pears.md").write_text("Pears are green.\n", encoding="utf-8")
    code, modules = imported_by("run", "-q", str(pipeline), "--workers", "0")
    assert code == 0
    assert "qdrant_client" in modules  # a new file: written, so the folder opened


def test_a_search_runs_no_garbage_collection_and_leaves_the_collector_on(tmp_path: Path) -> None:
    """A one-shot search keeps what it makes until it exits: the collector's passes would
    free next to nothing, each over the store client's objects."""
    from ragflow_config.cli._main import build_parser

    pipeline = built(tmp_path)
    args = build_parser().parse_args(["search", str(pipeline), "notes", "apples"])
    with collector_passes() as passes, contextlib.redirect_stdout(io.StringIO()) as out:
        code = args.handler(args)
    assert code == 0 and "apples.md" in out.getvalue()
    assert passes == []
    assert gc.isenabled()
