"""`validate --check-env`: variables, stores and embedding models checked, nothing written.

Real stores (Qdrant local, Milvus Lite, pgvector on the embedded server) and the
loopback fakes of OpenAI-compatible and Ollama servers. Each test takes a
snapshot of what the check could touch and compares it afterwards.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest
from _ollama_fake import OllamaServer
from embedding_http._server import EmbeddingServer

from ragflow_config.cli import main
from ragflow_config.pipeline._check_env import check_environment
from ragflow_config.pipeline._registry import Registry
from ragflow_config.pipeline._validate import load_pipeline
from ragflow_config.rag import QdrantStore, VectorStoreBase

from .test_kb_commands import output_of

HASHING = "{type: hashing, parameters: {dimensions: 16}}"


def project(folder: Path, store: str, embedding: str = HASHING, extra: str = "") -> Path:
    """A pipeline file with one store and one embedding model, and a source to index."""
    (folder / "docs").mkdir(exist_ok=True)
    (folder / "docs" / "a.txt").write_text("tea is brewed with hot water", encoding="utf-8")
    path = folder / "pipeline.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            version: 1
            vector_stores:
              main: {store}
            embeddings:
              model: {embedding}
            {extra}
            knowledge_bases:
              - name: docs
                sources: [{{path: docs}}]
                embedding: model
                vector_store: main
                collection: docs
            """
        ),
        encoding="utf-8",
    )
    return path


def snapshot(folder: Path) -> dict[str, tuple[int, int, str]]:
    """Every file and folder under ``folder``: its kind, modification time and content."""
    found = {}
    for path in sorted(folder.rglob("*")):
        digest = hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "folder"
        stat = path.stat()
        found[str(path.relative_to(folder))] = (stat.st_size, stat.st_mtime_ns, digest)
    return found


def check_env(capsys: pytest.CaptureFixture[str], file: Path, *flags: str) -> tuple[int, list[str]]:
    code = main(["validate", "--check-env", str(file), *flags])
    out, err = output_of(capsys)
    assert "Traceback" not in err
    return code, out.splitlines()


def line(lines: list[str], start: str) -> str:
    [found] = [text for text in lines if text.startswith(start)]
    return found


# Qdrant on local disk


def test_a_local_qdrant_store_not_created_yet_passes_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project(tmp_path, "{type: qdrant, parameters: {path: store/qdrant}}")
    before = snapshot(tmp_path)
    code, lines = check_env(capsys, file)
    assert code == 0, lines
    assert lines[0] == "1 file(s) valid"
    assert line(lines, "ok     vector store vector_stores.main (qdrant):").endswith(
        f"{tmp_path / 'store' / 'qdrant'} does not exist yet; `run` creates it"
    )
    assert line(lines, "ok     embedding embeddings.model (hashing):").endswith(
        "embeds a text (16 dimensions)"
    )
    assert snapshot(tmp_path) == before


def test_a_local_store_where_no_file_can_be_written_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 52: /proc passes a permission and mount check (as root, mounted writable),
    # yet takes no new file; the check writes one, as the run would.
    file = project(tmp_path, "{type: qdrant, parameters: {path: /proc/ragflow/qdrant}}")
    code, lines = check_env(capsys, file)
    assert code == 1, lines
    assert "cannot create /proc/ragflow/qdrant: /proc is not writable" in line(
        lines, "FAILED vector store vector_stores.main (qdrant):"
    )


def test_a_local_qdrant_store_that_exists_opens_and_is_left_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project(tmp_path, "{type: qdrant, parameters: {path: store}}")
    assert main(["run", "-q", str(file)]) == 0
    output_of(capsys)
    before = snapshot(tmp_path)
    code, lines = check_env(capsys, file)
    assert code == 0, lines
    assert "opens (1 collection(s)), not in use" in line(lines, "ok     vector store")
    assert snapshot(tmp_path) == before


def test_a_local_qdrant_store_another_client_holds_fails_naming_serve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project(tmp_path, "{type: qdrant, parameters: {path: store}}")
    assert main(["run", "-q", str(file)]) == 0
    output_of(capsys)

    async def held() -> tuple[int, list[str]]:
        async with QdrantStore(path=str(tmp_path / "store")) as store:
            await store.preload()  # as a running `serve` holds it
            return await asyncio.to_thread(check_env, capsys, file)

    code, lines = asyncio.run(held())
    assert code == 1
    failed = line(lines, "FAILED vector store vector_stores.main (qdrant):")
    assert "is open in another process, such as a running `ragflow-config serve`" in failed
    # What the store itself says when a command opens it then.
    asyncio.run(check_qdrant_refusal(tmp_path / "store"))


async def check_qdrant_refusal(path: Path) -> None:
    from ragflow_config._errors import VectorStoreError

    async with QdrantStore(path=str(path)) as store:
        await store.preload()
        with pytest.raises(
            VectorStoreError,
            match=r"ragflow-config serve`\. A server indexes in its own process: .*/refresh`.* Otherwise stop it",
        ):
            async with QdrantStore(path=str(path)):
                pass


# Milvus Lite


def test_a_milvus_lite_file_not_created_yet_passes_and_is_not_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project(tmp_path, "{type: milvus_lite, parameters: {uri: data/kb.db}}")
    before = snapshot(tmp_path)
    code, lines = check_env(capsys, file)
    assert code == 0, lines
    assert line(lines, "ok     vector store").endswith("does not exist yet; `run` creates it")
    assert snapshot(tmp_path) == before  # neither the folder nor the file, nor a lock file


def test_a_milvus_lite_file_opens_and_one_another_process_serves_fails_naming_serve(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = project(tmp_path, "{type: milvus_lite, parameters: {uri: data/kb.db}}")
    assert main(["run", "-q", str(file)]) == 0
    output_of(capsys)
    before = snapshot(tmp_path)
    code, lines = check_env(capsys, file)
    assert code == 0, lines
    assert line(lines, "ok     vector store").endswith("kb.db opens, not in use")
    assert snapshot(tmp_path) == before

    # Another process serving the file, as `ragflow-config serve` does.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys; from pymilvus import MilvusClient; "
            f"client = MilvusClient({str(tmp_path / 'data' / 'kb.db')!r}); "
            "print('open', flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "open\n"
        code, lines = check_env(capsys, file)
        assert code == 1
        failed = line(lines, "FAILED vector store vector_stores.main (milvus_lite):")
        assert "kb.db is open in another process, such as a running `ragflow-config serve`" in (
            failed
        )
        # A command that opens the store says the same, and leaves the holder's lock alone.
        assert main(["search", str(file), "docs", "tea"]) == 1
        assert "such as a running `ragflow-config serve`" in output_of(capsys)[1]
        code, lines = check_env(capsys, file)
        assert code == 1
    finally:
        holder.communicate("", timeout=30)
    assert check_env(capsys, file)[0] == 0


# pgvector on a server


@pytest.fixture
def fresh_database(pgvector_dsn: str) -> str:
    """A database of its own on the session's server, without the vector extension."""
    import psycopg

    name = f"check_env_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pgvector_dsn, autocommit=True) as connection:
        connection.execute(f"CREATE DATABASE {name}")
    return pgvector_dsn.rsplit("/", 1)[0] + f"/{name}"


def extensions(dsn: str) -> list[str]:
    import psycopg

    with psycopg.connect(dsn) as connection:
        return [row[0] for row in connection.execute("SELECT extname FROM pg_extension")]


def test_a_pgvector_server_answers_and_nothing_is_created_in_it(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    fresh_database: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    file = project(tmp_path, "{type: pgvector}")
    monkeypatch.setenv("PGVECTOR_DSN", fresh_database)
    before = extensions(fresh_database)
    code, lines = check_env(capsys, file)
    assert code == 0, lines
    assert line(lines, "ok     variable PGVECTOR_DSN:") == (
        "ok     variable PGVECTOR_DSN: set (for vector_stores.main)"
    )
    store = line(lines, "ok     vector store vector_stores.main (pgvector):")
    assert "is available; `run` creates the extension" in store
    assert extensions(fresh_database) == before == ["plpgsql"]
    assert fresh_database.split("@")[0] not in "\n".join(lines[1:])  # no connection string


def test_a_pgvector_store_without_its_variable_or_its_server_fails(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    closed_port: int,
) -> None:
    file = project(tmp_path, "{type: pgvector, parameters: {max_retries: 0}}")
    monkeypatch.delenv("PGVECTOR_DSN", raising=False)
    code, lines = check_env(capsys, file)
    assert code == 1
    assert line(lines, "FAILED variable PGVECTOR_DSN:").startswith(
        "FAILED variable PGVECTOR_DSN: not set; vector_stores.main needs it: export PGVECTOR_DSN="
    )
    assert "set the environment variable PGVECTOR_DSN" in line(lines, "FAILED vector store")

    monkeypatch.setenv("PGVECTOR_DSN", f"postgresql://user:hunter2@127.0.0.1:{closed_port}/db")
    code, lines = check_env(capsys, file)
    assert code == 1
    assert line(lines, "ok     variable PGVECTOR_DSN:")
    failed = line(lines, "FAILED vector store vector_stores.main (pgvector):")
    assert f"PgVectorStore(127.0.0.1:{closed_port}/db): OperationalError" in failed
    assert "hunter2" not in "\n".join(lines)


# Embedding models


def test_a_local_model_loads_and_embeds(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("onnxruntime", reason="the minilm extra is not installed")
    file = project(tmp_path, "{type: qdrant, parameters: {location: ':memory:'}}", "{type: minilm}")
    code, lines = check_env(capsys, file)
    assert code == 0, lines
    assert line(lines, "ok     embedding embeddings.model (minilm):").endswith(
        "embeds a text (384 dimensions)"
    )
    assert line(lines, "ok     vector store").endswith("in memory: nothing to open")


def test_an_openai_compatible_endpoint_answers_one_text_and_its_key_is_never_shown(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    embedding_server: EmbeddingServer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    model = (
        "{type: openai_compatible, parameters: {base_url: '"
        + embedding_server.url
        + "', model: m, dimensions: 8, api_key_env: MY_EMBEDDING_KEY}}"
    )
    file = project(tmp_path, "{type: qdrant, parameters: {location: ':memory:'}}", model)
    monkeypatch.setenv("MY_EMBEDDING_KEY", "sk-check-env-secret")
    code, lines = check_env(capsys, file)
    assert code == 0, lines
    assert "ok     variable MY_EMBEDDING_KEY: set (for embeddings.model)" in lines
    assert line(lines, "ok     embedding embeddings.model (openai_compatible):").endswith(
        "embeds a text (8 dimensions)"
    )
    [request] = embedding_server.requests  # one request, of one text
    assert len(request.body["input"]) == 1
    assert request.headers["authorization"] == "Bearer sk-check-env-secret"
    assert "sk-check-env-secret" not in "\n".join(lines)

    # A variable the file names is checked even where the server needs no key.
    monkeypatch.delenv("MY_EMBEDDING_KEY")
    code, lines = check_env(capsys, file)
    assert code == 1
    assert line(lines, "FAILED variable MY_EMBEDDING_KEY:").startswith(
        "FAILED variable MY_EMBEDDING_KEY: not set; embeddings.model names it"
    )

    # A model that makes vectors of another length than the file says.
    embedding_server.vector_length = 4
    monkeypatch.setenv("MY_EMBEDDING_KEY", "sk-check-env-secret")
    code, lines = check_env(capsys, file)
    assert code == 1
    assert "FAILED embedding embeddings.model (openai_compatible):" in "\n".join(lines)


def test_openai_without_its_key_fails_before_any_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = "{type: openai_compatible, parameters: {model: text-embedding-3-small, dimensions: 8}}"
    file = project(tmp_path, "{type: qdrant, parameters: {location: ':memory:'}}", model)
    code, lines = check_env(capsys, file)  # the conftest unsets OPENAI_API_KEY
    assert code == 1
    assert line(lines, "FAILED variable OPENAI_API_KEY:").startswith(
        "FAILED variable OPENAI_API_KEY: not set; embeddings.model needs it"
    )
    assert "no API key; set the environment variable OPENAI_API_KEY" in line(
        lines, "FAILED embedding"
    )


def test_an_ollama_endpoint_answers_or_is_reported_unreachable(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    ollama_server: OllamaServer,
    closed_port: int,
) -> None:
    def model(base_url: str) -> str:
        return (
            "{type: ollama, parameters: {base_url: '"
            + base_url
            + "', model: nomic-embed-text, dimensions: 8, max_retries: 0}}"
        )

    memory = "{type: qdrant, parameters: {location: ':memory:'}}"
    file = project(tmp_path, memory, model(ollama_server.host))
    code, lines = check_env(capsys, file)
    assert code == 0, lines
    assert line(lines, "ok     embedding embeddings.model (ollama):")
    assert [seen.path for seen in ollama_server.requests] == ["/api/embed"]

    file = project(tmp_path, memory, model(f"http://127.0.0.1:{closed_port}"))
    code, lines = check_env(capsys, file)
    assert code == 1
    assert "cannot connect" in line(lines, "FAILED embedding embeddings.model (ollama):")


# The JSON document and the file's own ${VAR} references


def test_check_env_json_gives_each_file_its_checks(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHECK_ENV_STORE", "store")
    monkeypatch.delenv("CHECK_ENV_UNSET", raising=False)
    file = project(
        tmp_path,
        "{type: qdrant, parameters: {path: '${CHECK_ENV_STORE}'}}",
        "{type: hashing, parameters: {dimensions: '${CHECK_ENV_UNSET:-16}'}}",
    )
    code, lines = check_env(capsys, file, "--json")
    assert code == 0
    document = json.loads("\n".join(lines))
    assert document["issues"] == []
    [entry] = document["files"]
    assert entry["file"].endswith("pipeline.yaml") and entry["valid"] is True
    checks = {(check["kind"], check["name"]): check for check in entry["checks"]}
    assert checks["variable", "CHECK_ENV_STORE"]["ok"] is True
    assert checks["variable", "CHECK_ENV_STORE"]["message"].startswith("set (read at ")
    assert checks["variable", "CHECK_ENV_UNSET"]["ok"] is None  # its default is used
    assert checks["vector_store", "vector_stores.main"]["type"] == "qdrant"
    assert checks["embedding", "embeddings.model"]["ok"] is True


def test_an_invalid_file_is_not_checked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = project(tmp_path, "{type: qdrant, parameters: {path: store, nope: 1}}")
    assert main(["validate", "--check-env", str(file)]) == 2
    out, err = output_of(capsys)
    assert "nope" in err and out == ""


class PluginStore(QdrantStore):
    """A store of a plugin that gives no probe: it is reported, never opened."""

    probe = VectorStoreBase.probe


def test_a_store_without_a_probe_is_reported_not_checked_and_not_opened(tmp_path: Path) -> None:
    registry = Registry.from_entry_points()
    registry.register("vector_store", "plugin_store", PluginStore)
    file = project(tmp_path, "{type: plugin_store, parameters: {path: store}}")
    loaded = load_pipeline(file, registry)
    before = snapshot(tmp_path)
    checks = asyncio.run(check_environment(loaded, registry))
    [store] = [check for check in checks if check.kind == "vector_store"]
    assert store.ok is None
    assert str(store) == (
        "--     vector store vector_stores.main (plugin_store): not checked: "
        f"QdrantStore({tmp_path / 'store'}) has no check that writes nothing"
    )
    assert snapshot(tmp_path) == before


def test_a_milvus_server_answers_or_is_reported_unreachable(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    milvus_server_uri: str,
    closed_port: int,
) -> None:
    file = project(tmp_path, f"{{type: milvus_lite, parameters: {{uri: '{milvus_server_uri}'}}}}")
    code, lines = check_env(capsys, file)
    assert code == 0, lines
    assert "the server answers (" in line(lines, "ok     vector store vector_stores.main")

    unreachable = f"http://127.0.0.1:{closed_port}"
    store = (
        f"{{type: milvus_lite, parameters: {{uri: '{unreachable}', max_retries: 0, timeout: 2}}}}"
    )
    code, lines = check_env(capsys, project(tmp_path, store))
    assert code == 1
    assert line(lines, "FAILED vector store vector_stores.main (milvus_lite):")
