"""AgentScope 2.0.11's spellings of arguments, taken and meaning what they mean there."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("agentscope", reason="the parity extra (agentscope==2.0.11) is not installed")

import agentscope.message as their_message

from ragflow_config.credential import DashScopeCredential
from ragflow_config.message import DataBlock, Msg, TextBlock
from ragflow_config.model import DashScopeChatModel
from ragflow_config.rag import MilvusLiteStore, QdrantStore


@pytest.mark.parametrize(
    ("spelling", "distance", "qdrant"),
    [("Cosine", "cosine", "Cosine"), ("Euclid", "euclidean", "Euclid"), ("Dot", "dot", "Dot")],
)
async def test_qdrant_takes_its_own_distance_names(
    spelling: str, distance: str, qdrant: str
) -> None:
    store = QdrantStore(location=":memory:", distance=spelling)
    assert store.parameters.distance == distance
    async with store:
        await store.create_collection("kb", dimensions=4)
        info = await store.get_client().get_collection("kb")
    assert info.config.params.vectors.distance.value == qdrant


async def test_qdrant_api_key_and_client_kwargs_reach_the_client(tmp_path: Path) -> None:
    store = QdrantStore(
        url="http://127.0.0.1:1",
        api_key="k-123",
        client_kwargs={"prefix": "qd", "check_compatibility": False},
    )
    async with store:
        remote = store.get_client()._client  # qdrant-client's REST transport
        assert remote._rest_headers["api-key"] == "k-123"
        assert remote._prefix == "/qd"
    with pytest.raises(TypeError, match="either `api_key` or `credential`"):
        QdrantStore(url="http://127.0.0.1:1", api_key="k", credential=object())  # type: ignore[arg-type]


def test_a_closed_store_has_no_client() -> None:
    with pytest.raises(Exception, match="async with store"):
        QdrantStore(location=":memory:").get_client()


@pytest.mark.parametrize(
    ("metric", "distance"), [("COSINE", "cosine"), ("IP", "dot"), ("L2", "euclidean")]
)
def test_milvus_takes_metric_type(metric: str, distance: str, tmp_path: Path) -> None:
    store = MilvusLiteStore(uri=str(tmp_path / "kb.db"), metric_type=metric)
    assert store.parameters.distance == distance


def test_chat_models_take_stream() -> None:
    """The seed's rerank example builds DashScopeChatModel with AgentScope's arguments."""
    credential = DashScopeCredential(api_key="sk-test")
    for stream in (False, True):
        model = DashScopeChatModel(credential=credential, model="qwen-max", stream=stream)
        assert model.stream is stream


def test_message_accessors_answer_as_agentscopes() -> None:
    blocks = [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]
    data = DataBlock.from_bytes(b"\x89PNG\r\n\x1a\n", "image/png")
    ours = Msg("u", [TextBlock(**b) for b in blocks] + [data], "user")
    theirs = their_message.Msg(
        name="u", role="user", content=[*blocks, data.model_dump(mode="json")]
    )
    for separator in ("\n", " | "):
        assert ours.get_text_content(separator) == theirs.get_text_content(separator)
    for kind in (None, "text", "data", ["text", "data"], "tool_call"):
        assert ours.has_content_blocks(kind) == theirs.has_content_blocks(kind)  # type: ignore[arg-type]
        assert [b.type for b in ours.get_content_blocks(kind)] == [
            b.type
            for b in theirs.get_content_blocks(kind)  # type: ignore[arg-type]
        ]
    assert Msg("u", [data], "user").get_text_content() is None


def test_an_embedding_response_dumps_to_agentscopes_fields() -> None:
    """AgentScope's embedding tests compare ``asdict(response)`` with its fields: the run's
    cache counts ride along as attributes, not fields."""
    from dataclasses import asdict

    import agentscope.embedding as theirs

    from ragflow_config.embedding import EmbeddingResponse

    ours = EmbeddingResponse(embeddings=[[1.0]], cache_hits=1, cache_misses=0)
    assert asdict(ours).keys() == asdict(theirs.EmbeddingResponse(embeddings=[[1.0]])).keys()
    assert (ours.cache_hits, ours.cache_misses) == (1, 0)


async def test_a_tool_call_returns_blocks_and_calling_the_tool_a_tool_chunk() -> None:
    """docs/agentscope.md, "tool results": ``call`` gives the blocks the model reads,
    ``await tool(...)`` AgentScope's ``ToolChunk`` of them."""
    from ragflow_config.middleware import RAGMiddleware
    from ragflow_config.tool import ToolChunk

    [tool] = await RAGMiddleware(knowledge_bases=[]).list_tools()
    blocks = await tool.call(query="anything")
    chunk = await tool(query="anything")
    assert isinstance(chunk, ToolChunk) and chunk.state == "success"
    texts = [[block.text for block in content] for content in (blocks, chunk.content)]
    assert texts == [["No relevant content found."]] * 2
