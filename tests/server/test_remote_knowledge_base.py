"""`RemoteKnowledgeBase` against a real `ragflow-config serve` process on loopback."""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from ragflow_config import (
    CollectionMismatchError,
    EmbeddingError,
    RemoteKnowledgeBaseError,
    VectorStoreError,
)
from ragflow_config.message import TextBlock
from ragflow_config.middleware import RAGMiddleware
from ragflow_config.pipeline import Pipeline
from ragflow_config.rag import RemoteKnowledgeBase

from ._serving import TOKEN, ServerProcess, held_embeddings, index, write_pipeline

# Hybrid with RM3 feedback: the dense side, the lexical side, fusion and the second
# lexical search all run on the server, and explain reports each.
HYBRID = "    metadata_filter: {tenant_id: tutorial}\n"
HYBRID_RETRIEVAL = HYBRID + "    retrieval: {mode: hybrid, feedback: {rm3: {fb_docs: 2}}}\n"
QUERIES = ["read a file line by line", "append an item to a list"]


async def _hybrid_pipeline(folder: Path) -> Path:
    file = write_pipeline(folder)
    file.write_text(file.read_text().replace(HYBRID, HYBRID_RETRIEVAL, 1), encoding="utf-8")
    await index(file)
    return file


async def _local(
    file: Path, explain: bool
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """The search options, and what the in-process knowledge base answers with them: its
    hits and its documents (read before the server holds the store)."""
    queries: list[str | TextBlock] = [QUERIES[0], TextBlock(text=QUERIES[1])]
    async with Pipeline.load(file).build(["tutorial"]) as built:
        kb = built.knowledge_base("tutorial")
        everything = await kb.search(queries, top_k=4)
        # files.md's chunks (by the revision the run stamped on them) scoring 0.3 and up
        [revision] = {
            h.chunk.metadata["ragflow"]["revision"]
            for h in everything
            if h.chunk.source == "files.md"
        }
        where = {"ragflow": {"revision": revision}}
        options = {"top_k": 4, "score_threshold": 0.3, "where": where, "explain": explain}
        hits = await kb.search(queries, **options)
        unfiltered = await kb.search(queries, top_k=4, where=where)
        documents = await kb.list_documents()
    assert {h.chunk.source for h in everything} > {h.chunk.source for h in hits} == {"files.md"}
    assert 0 < len(hits) < len(unfiltered)  # the threshold dropped some
    return (
        options,
        [hit.model_dump(mode="json") for hit in hits],
        sorted((d.model_dump(mode="json") for d in documents), key=lambda d: d["source"]),
    )


@pytest.mark.parametrize("explain", [False, True])
async def test_remote_search_and_listing_answer_what_the_local_knowledge_base_does(
    tmp_path: Path, server_process: type[ServerProcess], explain: bool
) -> None:
    file = await _hybrid_pipeline(tmp_path)
    options, hits, documents = await _local(file, explain)
    assert all(("explain" in hit) == explain for hit in hits)
    server = server_process(str(file), env={"RAGFLOW_SERVE_TOKEN": TOKEN})

    async with RemoteKnowledgeBase(server.url, "tutorial", token=TOKEN) as remote:
        assert remote.description == "The Python tutorial, for newcomers."
        queries: list[str | TextBlock] = [QUERIES[0], TextBlock(text=QUERIES[1])]
        found = await remote.search(queries, **options)
        assert [hit.model_dump(mode="json") for hit in found] == hits
        listed = await remote.list_documents()
        assert sorted((d.model_dump(mode="json") for d in listed), key=lambda d: d["source"]) == (
            documents
        )
        assert await remote.search(QUERIES, top_k=0) == []


async def test_the_token_comes_from_the_environment_and_is_never_shown(
    indexed: Path, server_process: type[ServerProcess], monkeypatch: pytest.MonkeyPatch
) -> None:
    server = server_process(str(indexed), env={"RAGFLOW_SERVE_TOKEN": TOKEN})
    monkeypatch.setenv("RAGFLOW_REMOTE_TOKEN", TOKEN)
    async with RemoteKnowledgeBase(server.url, "howto") as remote:
        assert TOKEN not in repr(remote) and TOKEN not in remote.service
        [hit] = await remote.search(["zanzibar"], top_k=1)
        assert hit.chunk.source == "logging.md"

    monkeypatch.delenv("RAGFLOW_REMOTE_TOKEN")
    with pytest.raises(RemoteKnowledgeBaseError, match="set RAGFLOW_REMOTE_TOKEN") as refused:
        await RemoteKnowledgeBase(server.url, "howto").search(["zanzibar"])
    assert refused.value.status == 401
    wrong = TOKEN[::-1]
    with pytest.raises(RemoteKnowledgeBaseError, match="not the server's") as refused:
        await RemoteKnowledgeBase(server.url, "howto", token=wrong).search(["zanzibar"])
    assert wrong not in str(refused.value) and refused.value.status == 401


async def test_the_servers_refusals_are_the_librarys_exceptions(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    server = server_process(str(indexed))
    remote = RemoteKnowledgeBase(server.url, "tutorial")
    with pytest.raises(RemoteKnowledgeBaseError, match="no knowledge base named 'nope'") as missing:
        async with RemoteKnowledgeBase(server.url, "nope"):
            pass
    assert missing.value.status == 404
    deep: dict[str, Any] = {"a": "x"}
    for _ in range(12):
        deep = {"k": deep}
    with pytest.raises(ValueError, match="nests over 8 levels deep"):  # as a local bad filter
        await remote.search(["file"], where=deep)
    with pytest.raises(ValueError, match=r"query\[1\] is empty"):
        await remote.search(["file", "   "])
    with pytest.raises(TypeError, match="a list of queries"):
        await remote.search("file")  # type: ignore[call-overload]
    await remote.aclose()


async def test_an_unreachable_server_is_a_store_that_is_down() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    remote = RemoteKnowledgeBase(f"http://127.0.0.1:{port}", "tutorial", max_retries=1)
    with pytest.raises(VectorStoreError, match=r"ConnectError.*gave up after 2 attempts"):
        await remote.search(["file"])


async def test_the_servers_model_and_store_failures_keep_their_types(
    tmp_path: Path, server_process: type[ServerProcess]
) -> None:
    async with held_embeddings(tmp_path) as (file, embeddings, gate):
        server = server_process(str(file), "--store-timeout-seconds", "1")
        remote = RemoteKnowledgeBase(server.url, "tutorial", max_retries=0)
        with pytest.raises(VectorStoreError, match="did not answer in 1 s"):
            await remote.search(["file"])
        gate.set()
        from embedding_http._server import Reply, error_body

        embeddings.reply = lambda number, body: Reply(401, error_body("bad key"))
        with pytest.raises(EmbeddingError, match="embedding service cannot be reached"):
            await remote.search(["file"])
        assert not isinstance(EmbeddingError("x"), CollectionMismatchError)
        await remote.aclose()


async def test_our_rag_middleware_retrieves_through_a_remote_knowledge_base(
    indexed: Path, server_process: type[ServerProcess]
) -> None:
    async with Pipeline.load(indexed).build(["tutorial"]) as built:
        local = await RAGMiddleware([built.knowledge_base("tutorial")]).retrieve(QUERIES)
    server = server_process(str(indexed))
    async with RemoteKnowledgeBase(server.url, "tutorial") as remote:
        middleware = RAGMiddleware([remote])
        remote_hits = await middleware.retrieve(QUERIES)
        assert [h.model_dump(mode="json") for h in remote_hits] == [
            h.model_dump(mode="json") for h in local
        ]
        [tool] = await RAGMiddleware(
            [remote], RAGMiddleware.Parameters(mode="agentic")
        ).list_tools()
        assert "The Python tutorial, for newcomers." in tool.description


SERVE_IN_PAGES = """
import sys
from ragflow_config.server import ServeOptions, serve
serve(sys.argv[1], options=ServeOptions(port=0, max_list_limit=2))
"""


async def test_list_documents_reads_every_page_of_the_servers_size(indexed: Path) -> None:
    async with Pipeline.load(indexed).build(["tutorial"]) as built:
        expected = sorted(d.source for d in await built.knowledge_base("tutorial").list_documents())
    assert len(expected) == 3  # two pages of two at most
    server = subprocess.Popen(
        [sys.executable, "-c", SERVE_IN_PAGES, str(indexed)],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stderr is not None
        announced = next(line for line in server.stderr if " on http://" in line)
        url = announced.split(" on ", 1)[1].split(" ", 1)[0]
        async with RemoteKnowledgeBase(url, "tutorial") as remote:
            listed = await remote.list_documents()
    finally:
        server.kill()
        server.wait()
    assert sorted(d.source for d in listed) == expected
