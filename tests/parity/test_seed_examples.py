"""AgentScope 2.0.11's RAG documentation examples run on ragflow_config, imports changed only.

Each example (``_seed_examples.py``, verbatim) runs with ``from agentscope.``
replaced by ``from ragflow_config.``, nothing else, in one namespace and in the
documentation's order, so later examples use what earlier ones made
(``sections``, ``chunks``, ``store``, ``knowledge``). The test supplies only
what the documentation leaves to its reader: the files the examples name in
the working folder, a ``chat_model`` and ``Agent`` for the agent examples (a
scripted model, this package's agent), and DashScope, which the embedding
example calls, as a local server speaking its wire format.
"""

from __future__ import annotations

import ast
import doctest
import inspect
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")

from embedding_http._dashscope_server import DashScopeServer
from parsers.conftest import build_docx, build_pptx, build_xlsx, fixture_path, image_bytes

from ragflow_config.agent import Agent
from ragflow_config.embedding import DashScopeEmbeddingModel, HashingEmbeddingModel
from ragflow_config.message import DataBlock, TextBlock
from ragflow_config.model import ScriptedChatModel
from ragflow_config.rag import Chunk, KnowledgeBase, QdrantStore, Section

from ._seed_examples import EXAMPLES

# docs/agentscope.md, "text parser types": JSON Lines, XHTML and e-mail besides AgentScope's 8.
TEXT_PARSER_EXTRAS = ("application/x-ndjson", "application/xhtml+xml", "message/rfc822")
CATS = "# Cats\nCats sleep 12-16 hours per day.\n"


def ours(name: str) -> str:
    """The example with its imports changed, and nothing else."""
    code = EXAMPLES[name].replace("from agentscope.", "from ragflow_config.")
    assert not re.search(r"^\s*(from|import) agentscope\b", code, re.M), name
    return code


async def run(name: str, namespace: dict[str, Any]) -> None:
    compiled = compile(
        ours(name), f"<example: {name}>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    )
    result = eval(compiled, namespace)  # the documentation's own examples
    if inspect.iscoroutine(result):
        await result


@pytest.fixture
def workspace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The files the examples read, in the working folder they name them from."""
    (tmp_path / "cats.md").write_text(CATS)
    shutil.copy(fixture_path("report.pdf"), tmp_path / "report.pdf")
    (tmp_path / "deck.pptx").write_bytes(build_pptx())
    (tmp_path / "doc.docx").write_bytes(build_docx())
    (tmp_path / "table.xlsx").write_bytes(build_xlsx())
    (tmp_path / "cat.png").write_bytes(image_bytes())
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.fixture
def dashscope(dashscope_server: DashScopeServer) -> Iterator[DashScopeServer]:
    """DashScope, where the example's model calls it by default, is the local server."""
    parameters = DashScopeEmbeddingModel.Parameters
    field = parameters.model_fields["base_url"]
    real = field.default
    field.default = dashscope_server.url
    parameters.model_rebuild(force=True)
    try:
        yield dashscope_server
    finally:
        field.default = real
        parameters.model_rebuild(force=True)


async def test_the_indexing_and_retrieval_examples_run_in_order(
    workspace: Path, dashscope: DashScopeServer
) -> None:
    namespace: dict[str, Any] = {}
    await run("chunker parameters", namespace)
    for parser in ("pdf", "powerpoint", "word", "excel", "image"):
        await run(parser, namespace)
        assert namespace["sections"], parser
    await run("text file", namespace)  # last: the chunk example chunks its sections
    [section] = namespace["sections"]
    assert section.content.text == CATS and section.source == "cats.md"

    await run("chunk", namespace)
    [chunk] = namespace["chunks"]
    assert (chunk.content.text, chunk.chunk_index, chunk.total_chunks) == (CATS.strip(), 0, 1)
    await run("knowledge base", namespace)
    assert isinstance(namespace["knowledge"], KnowledgeBase)
    assert isinstance(namespace["document_id"], str)
    [request] = dashscope.requests
    assert request.body["input"]["texts"] == [CATS.strip()]
    assert request.body["parameters"]["dimension"] == 1024

    for backend in ("milvus lite", "mongodb", "elasticsearch"):
        scratch: dict[str, Any] = {}
        await run(backend, scratch)  # only builds the store, as the examples do
        assert type(scratch["store"]).__name__.lower().startswith(backend.split()[0])

    await run("vector retrieval", namespace)
    cats_id = namespace["document_id"]
    [hit] = namespace["results"]
    assert (hit.document_id, hit.chunk.content.text) == (cats_id, CATS.strip())
    assert (hit.chunk.source, hit.chunk.metadata) == ("cats.md", {"filename": "cats.md"})
    store = namespace["store"]
    async with store:  # the next examples leave entering the store to the reader
        # "The backing collection is created on first use, sized to embedding_model.dimensions"
        assert await store.collection_dimensions("demo-kb") == 1024
        await run("document management", namespace)
        [summary] = namespace["summaries"]
        assert (summary.document_id, summary.source, summary.chunk_count) == (cats_id, "cats.md", 1)
        assert summary.metadata == {"filename": "cats.md"}
        knowledge = namespace["knowledge"]
        assert await knowledge.list_documents() == []  # delete_document took every chunk
        assert await knowledge.search(["When do cats sleep?"]) == []
        await run("metadata_filter", namespace)
    assert namespace["knowledge"].metadata_filter == {"tenant_id": "tenant-a"}


async def test_the_capability_examples_answer_as_agentscope_does(
    dashscope: DashScopeServer,
) -> None:
    import agentscope.credential
    import agentscope.embedding

    namespace: dict[str, Any] = {}
    for example in doctest.DocTestParser().get_examples(ours("supported media types")):
        if not example.want:
            exec(example.source, namespace)
        else:
            got = eval(example.source, namespace)
            documented = ast.literal_eval(example.want)
            # docs/agentscope.md's "text parser types" row: ours reads three types more.
            assert got[: len(documented)] == documented
            assert got[len(documented) :] in ([], list(TEXT_PARSER_EXTRAS))

    namespace["chunks"] = []
    await run("knowledge base", namespace)  # for its embedding_model
    theirs = agentscope.embedding.DashScopeEmbeddingModel(
        credential=agentscope.credential.DashScopeCredential(api_key="YOUR_API_KEY"),
        model="text-embedding-v4",
        dimensions=1024,
    )
    [example] = doctest.DocTestParser().get_examples(ours("supports multimodal"))
    # The documentation prints True for a multimodal model; text-embedding-v4 reads text.
    assert eval(example.source, namespace) is theirs.supports_multimodal


async def test_the_agent_examples_build_agents(workspace: Path) -> None:
    namespace: dict[str, Any] = {"Agent": Agent, "chat_model": ScriptedChatModel([])}
    await run("chunker parameters", namespace)
    await run("text file", namespace)
    await run("chunk", namespace)
    async with QdrantStore(location=":memory:") as store:
        namespace["knowledge"] = KnowledgeBase(
            "demo-kb", "A toy corpus.", HashingEmbeddingModel(dimensions=64), store, "demo-kb"
        )
        await namespace["knowledge"].insert_document(namespace["chunks"])
        await run("static mode", namespace)
        assert namespace["agent"].middlewares == (namespace["static_mw"],)
        await run("agentic mode", namespace)
        [tool] = namespace["toolkit"].tools
        found = await tool(query="How long do cats sleep?")  # AgentScope's tool call
        assert "Cats sleep 12-16 hours" in found.content[0].text
        await run("combined modes", namespace)
        assert namespace["agent"].middlewares == (namespace["static_mw"], namespace["agentic_mw"])
        await run("rerank model", namespace)
        assert namespace["rag_mw"].rerank_model.model_name == "qwen-max"


async def test_the_extension_examples_subclass_our_bases(
    caplog: pytest.LogCaptureFixture,
) -> None:
    namespace: dict[str, Any] = {}
    await run("custom parser", namespace)
    sections = await namespace["MyMarkdownParser"]().parse(b"# A\n## B\ntext", "a.md")
    assert [s.metadata for s in sections] == [{"index": 0}, {"index": 1}]
    assert all(isinstance(s, Section) for s in sections)

    assert ".md" in namespace["MyMarkdownParser"].supported_extensions()

    await run("custom chunker", namespace)
    schema = namespace["FixedCharChunker"].Parameters.model_json_schema()
    assert schema["properties"]["chunk_size"]["minimum"] == 1
    chunker = namespace["FixedCharChunker"](parameters=None, chunk_size=4)
    picture = DataBlock.from_bytes(image_bytes(), "image/png")
    chunks = await chunker.chunk(
        [
            Section(content=TextBlock(text="abcdefghij"), source="a"),
            Section(content=picture, source="a"),
        ]
    )
    assert [c.content.text for c in chunks[:3]] == ["abcd", "efgh", "ij"]
    assert all(isinstance(c, Chunk) for c in chunks)
    assert [(c.chunk_index, c.total_chunks) for c in chunks] == [(i, 4) for i in range(4)]

    # Both through a knowledge base: a text-only model skips the picture, with a warning.
    guide = await namespace["MyMarkdownParser"]().parse(
        "# Pets\n## Cats\nCats purr when content.\n## Dogs\nDogs need a walk twice a day.",
        "guide.md",
    )
    pieces = await namespace["FixedCharChunker"](parameters=None).chunk(
        [*guide, Section(content=picture, source="guide.md")]
    )
    async with QdrantStore(location=":memory:") as store:
        guide_kb = KnowledgeBase(
            "guide",
            "Custom parser and chunker.",
            HashingEmbeddingModel(dimensions=128),
            store,
            "guide",
        )
        with caplog.at_level("WARNING", logger="ragflow_config.knowledge_base"):
            guide_id = await guide_kb.insert_document(pieces)
        assert "guide.md#3 (image/png)" in caplog.text
        [summary] = await guide_kb.list_documents()
        assert (summary.document_id, summary.chunk_count) == (guide_id, 3)
        [hit] = await guide_kb.search(["walk twice a day"], top_k=1)
        assert "walk twice" in hit.chunk.content.text and hit.chunk.metadata == {"index": 2}

    await run("custom vector database", namespace)
    assert namespace["MyVectorStore"]() is not None  # its methods are the base's to override
