"""AgentScope 2.0.11's objects and ours, mixed up as a new user would (issue 37, item 3).

Plain data (blocks, chunks) converts and is accepted either way; an object
that runs one library's code given to the other fails at once, or in the
tool's answer, with an error that names both libraries and the way across.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator

import pytest

pytest.importorskip("agentscope", reason="the agentscope extra is not installed")

import agentscope.message as their_message
import agentscope.rag as theirs
from _agentscope_model import ScriptedModel
from agentscope.agent import Agent
from agentscope.credential import OpenAICredential as TheirCredential
from agentscope.embedding import OpenAIEmbeddingModel as TheirEmbeddingModel
from agentscope.middleware import RAGMiddleware as TheirMiddleware
from agentscope.model import ChatResponse
from agentscope.tool import Toolkit

import ragflow_config.message as our_message
import ragflow_config.rag as ours
from ragflow_config import MixedLibrariesError
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.middleware import RAGMiddleware

TEXT = "Cats sleep sixteen hours a day."
BRIDGE = "BuiltPipeline.as_agentscope()"


def chunks(rag: object, message: object) -> list:
    return [
        rag.Chunk(  # type: ignore[attr-defined]
            content=message.TextBlock(text=TEXT),  # type: ignore[attr-defined]
            source="cats.md",
            chunk_index=0,
            total_chunks=1,
        )
    ]


def model() -> HashingEmbeddingModel:
    return HashingEmbeddingModel(dimensions=64)


@pytest.fixture
async def knowledge() -> AsyncIterator[ours.KnowledgeBase]:
    async with ours.QdrantStore(location=":memory:") as store:
        kb = ours.KnowledgeBase(
            name="cats",
            description="Cat facts.",
            embedding_model=model(),
            vector_store=store,
            collection="cats",
        )
        await kb.insert_document(chunks(ours, our_message))
        yield kb


def user(text: str) -> their_message.Msg:
    return their_message.Msg(name="user", content=[their_message.TextBlock(text=text)], role="user")


async def test_our_knowledge_base_in_their_agentic_middleware_answers_with_the_way_out(
    knowledge: ours.KnowledgeBase,
) -> None:
    [tool] = await TheirMiddleware(knowledge_bases=[knowledge]).list_tools()
    result = await tool.call(query="How long do cats sleep?")
    [block] = result.content
    assert "a ragflow_config KnowledgeBase was given to agentscope's RAGMiddleware" in block.text
    assert BRIDGE in block.text


async def test_our_knowledge_base_in_their_static_middleware_logs_the_way_out(
    knowledge: ours.KnowledgeBase, caplog: pytest.LogCaptureFixture
) -> None:
    middleware = TheirMiddleware(
        knowledge_bases=[knowledge], parameters=TheirMiddleware.Parameters(mode="static")
    )
    answer = ChatResponse(content=[their_message.TextBlock(text="ok")], is_last=True)
    agent = Agent(
        name="helper",
        system_prompt="Answer.",
        model=ScriptedModel([answer]),
        toolkit=Toolkit(),
        middlewares=[middleware],
    )
    with caplog.at_level(logging.ERROR, logger="as"):
        await agent.reply(user("How long do cats sleep?"))
    # AgentScope's static mode logs a failed search and answers without context.
    logged = "\n".join(str(record.exc_info[1]) for record in caplog.records if record.exc_info)
    assert "a ragflow_config KnowledgeBase was given to agentscope's RAGMiddleware" in logged
    assert BRIDGE in logged


async def test_our_middleware_in_their_agent_is_refused_when_the_agent_is_built(
    knowledge: ours.KnowledgeBase,
) -> None:
    with pytest.raises(MixedLibrariesError) as error:
        Agent(
            name="helper",
            system_prompt="Answer.",
            model=ScriptedModel([]),
            toolkit=Toolkit(),
            middlewares=[RAGMiddleware(knowledge_bases=[knowledge])],
        )
    assert "a ragflow_config RAGMiddleware was given to agentscope's Agent" in str(error.value)
    assert BRIDGE in str(error.value)


async def test_our_embedding_model_embeds_for_their_knowledge_base() -> None:
    async with theirs.QdrantStore(location=":memory:") as store:
        kb = theirs.KnowledgeBase(
            name="cats",
            description="Cat facts.",
            embedding_model=model(),
            vector_store=store,
            collection="cats",
        )
        await kb.insert_document(chunks(theirs, their_message))
        [hit] = await kb.search([their_message.TextBlock(text=TEXT)], top_k=1)
    assert hit.chunk.content.text == TEXT
    assert hit.score == pytest.approx(1.0)  # the same text: the same vector, not none


async def test_their_blocks_and_chunks_are_taken_by_our_knowledge_base(
    knowledge: ours.KnowledgeBase,
) -> None:
    document_id = await knowledge.insert_document(chunks(theirs, their_message))
    hits = await knowledge.search([their_message.TextBlock(text=TEXT)], top_k=5)
    assert {hit.document_id for hit in hits} >= {document_id}
    assert all(hit.score == pytest.approx(1.0) for hit in hits)
    assert all(isinstance(hit.chunk.content, our_message.TextBlock) for hit in hits)


async def test_our_store_under_their_knowledge_base_is_refused_on_insert() -> None:
    async with ours.QdrantStore(location=":memory:") as store:
        kb = theirs.KnowledgeBase(
            name="cats",
            description="Cat facts.",
            embedding_model=model(),
            vector_store=store,
            collection="cats",
        )
        with pytest.raises(MixedLibrariesError) as error:
            await kb.insert_document(chunks(theirs, their_message))
        assert not await store.has_collection("cats") or not await store.list_documents("cats")
    message = str(error.value)
    assert "agentscope's VectorRecord was given to ragflow_config's QdrantStore" in message
    assert "agentscope's QdrantStore" in message


async def test_their_parts_in_our_knowledge_base_are_refused() -> None:
    async with theirs.QdrantStore(location=":memory:") as their_store:
        with pytest.raises(
            MixedLibrariesError, match=re.escape("use ragflow_config.rag.QdrantStore")
        ):
            ours.KnowledgeBase("cats", "d", model(), their_store, "cats")
    their_model = TheirEmbeddingModel(
        credential=TheirCredential(api_key="sk-test"), model="text-embedding-3-small", dimensions=8
    )
    async with ours.QdrantStore(location=":memory:") as store:
        with pytest.raises(
            MixedLibrariesError,
            match=re.escape(
                "agentscope's OpenAIEmbeddingModel was given to ragflow_config's KnowledgeBase: "
                "use ragflow_config.embedding.OpenAIEmbeddingModel"
            ),
        ):
            ours.KnowledgeBase("cats", "d", their_model, store, "cats")


async def test_their_knowledge_base_in_our_middleware_is_refused() -> None:
    async with theirs.QdrantStore(location=":memory:") as store:
        kb = theirs.KnowledgeBase(
            name="cats",
            description="d",
            embedding_model=model(),
            vector_store=store,
            collection="cats",
        )
        with pytest.raises(
            MixedLibrariesError,
            match=re.escape(
                "agentscope's KnowledgeBase was given to ragflow_config's RAGMiddleware: "
                "build it with ragflow_config.rag.KnowledgeBase"
            ),
        ):
            RAGMiddleware(knowledge_bases=[kb])


async def test_their_parameters_models_are_taken_where_they_fit() -> None:
    import agentscope.model as their_model

    from ragflow_config.rag import ApproxTokenChunker

    middleware = RAGMiddleware(
        knowledge_bases=[], parameters=TheirMiddleware.Parameters(mode="static", top_k=3)
    )
    assert middleware.parameters == RAGMiddleware.Parameters(mode="static", top_k=3)
    chunker = ApproxTokenChunker(
        parameters=theirs.ApproxTokenChunker.Parameters(chunk_size=8, overlap=2)
    )
    assert chunker.parameters == ApproxTokenChunker.Parameters(chunk_size=8, overlap=2)

    with pytest.raises(MixedLibrariesError, match="give them as keywords"):
        from ragflow_config.model import OpenAIChatModel

        OpenAIChatModel(parameters=their_model.OpenAIChatModel.Parameters(temperature=0.2))
