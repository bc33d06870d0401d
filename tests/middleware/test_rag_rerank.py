"""Reranking: what the rerank model is asked, how its answer is read, and falling back."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from ragflow_config._errors import ChatModelError
from ragflow_config.agent import Agent
from ragflow_config.embedding import HashingEmbeddingModel
from ragflow_config.message import DataBlock, HintBlock, Msg, TextBlock, ToolCallBlock
from ragflow_config.middleware import RAGMiddleware
from ragflow_config.model import ChatResponse, ScriptedChatModel
from ragflow_config.rag import Chunk, KnowledgeBase, VectorSearchResult
from ragflow_config.tool import Toolkit

from .conftest import MakeKB

QUERY = "paid days off and leave"
DOCUMENTS = {
    "pto.md": "Employees receive 25 days of paid time off per year.",
    "parental.md": "Parental leave is 16 weeks of paid leave for every new parent.",
    'policy "v2" & more.md': "Sick days are paid and do not count as time off.",
    "expenses.md": "Travel expenses are reimbursed within 30 days when receipts are attached.",
    "holidays.md": "Public holidays are days off and are paid as usual.",
}


@pytest.fixture
async def kb(make_kb: MakeKB) -> KnowledgeBase:
    return await make_kb("hr", DOCUMENTS, description="HR policies")


async def vector_order(kb: KnowledgeBase, count: int) -> list[str]:
    hits = await RAGMiddleware([kb], top_k=count).retrieve([QUERY])
    return [hit.chunk.source for hit in hits]


def sources(hits: list[VectorSearchResult]) -> list[str]:
    return [hit.chunk.source for hit in hits]


async def test_the_rerank_model_reorders_what_the_agent_sees(kb: KnowledgeBase):
    candidates = await vector_order(kb, 4)
    reranker = ScriptedChatModel(['```json\n{"ids": ["c3", 3, " C3 ", "c9", "c1"]}\n```'])
    middleware = RAGMiddleware(
        knowledge_bases=[kb],
        rerank_model=reranker,
        parameters=RAGMiddleware.Parameters(top_k=2, rerank_candidate_k=4),
    )
    call = ToolCallBlock(id="call_1", name="search_knowledge", input=json.dumps({"query": QUERY}))
    model = ScriptedChatModel([ChatResponse(content=[call]), "Done."])
    agent = Agent("hr-bot", "", model, Toolkit(await middleware.list_tools()), [middleware])

    await agent.reply(Msg("alice", "Tell me about leave.", "user"))

    # Duplicates (in any spelling) and unknown ids are ignored: c3 then c1.
    result = model.calls[1].messages[-1].content[0]
    listed = [line for line in result.output[0].text.splitlines() if line.startswith("[")]
    assert listed == [f"[1] (source: {candidates[2]})", f"[2] (source: {candidates[0]})"]

    [request] = reranker.calls[0].messages
    prompt, *blocks = request.content
    assert f"<user-query>\n{QUERY}\n</user-query>" in prompt.text
    assert "return the ids of the 2 most relevant" in prompt.text
    shown = [block.text for block in blocks if "<candidate " in block.text]
    assert len(shown) == 4
    for number, source in enumerate(candidates, start=1):
        escaped = source.replace("&", "&amp;").replace('"', "&quot;")
        assert shown[number - 1].startswith(f'<candidate id="c{number}" source="{escaped}">\n')
    assert 'source="policy &quot;v2&quot; &amp; more.md"' in "".join(shown)


@pytest.mark.parametrize(
    ("answer", "picked"),
    [
        ('Here you go: {"ids": [4, 2]} Hope this helps.', [3, 1, 0]),
        ('{"ids": ["c4"]}', [3, 0, 1]),  # the model's choice, then vector order
        ('{"ids": ["2", "c2", "c1", "c3", "c4"]}', [1, 0, 2]),
    ],
)
async def test_answers_are_read_leniently(kb: KnowledgeBase, answer: str, picked: list[int]):
    candidates = await vector_order(kb, 4)
    middleware = RAGMiddleware(
        [kb], rerank_model=ScriptedChatModel([answer]), top_k=3, rerank_candidate_k=4
    )

    hits = await middleware.retrieve([QUERY])

    assert sources(hits) == [candidates[i] for i in picked]


@pytest.mark.parametrize(
    "failure",
    [
        ChatModelError("rerank server: HTTP 500: overloaded (gave up after 4 attempts)"),
        "c2 is clearly the best one.",
        '{"ranking": ["c2"]}',
    ],
)
async def test_a_failed_rerank_logs_a_warning_and_keeps_vector_order(
    kb: KnowledgeBase, failure: Any, caplog: pytest.LogCaptureFixture
):
    middleware = RAGMiddleware([kb], rerank_model=ScriptedChatModel([failure]), top_k=2)

    with caplog.at_level(logging.WARNING, logger="ragflow_config.middleware.rag"):
        hits = await middleware.retrieve([QUERY])

    assert sources(hits) == await vector_order(kb, 2)
    [record] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert record.getMessage().startswith("rerank with scripted failed, keeping the vector order")


@pytest.mark.parametrize(
    ("parameters", "shown"),
    [
        ({"top_k": 2}, 4),  # default: 2 x top_k
        ({"top_k": 2, "rerank_candidate_k": 5}, 5),
        ({"top_k": 2, "rerank_candidate_k": 2}, 2),  # equal to top_k is allowed
    ],
)
async def test_the_rerank_model_judges_rerank_candidate_k_candidates(
    kb: KnowledgeBase, parameters: dict[str, int], shown: int
):
    reranker = ScriptedChatModel(['{"ids": []}'])
    middleware = RAGMiddleware([kb], rerank_model=reranker, **parameters)

    hits = await middleware.retrieve([QUERY])

    assert len(hits) == 2
    request = reranker.calls[0].messages[0]
    assert (
        sum("<candidate " in b.text for b in request.content if isinstance(b, TextBlock)) == shown
    )


async def test_without_a_rerank_model_rerank_candidate_k_is_ignored(kb: KnowledgeBase):
    hits = await RAGMiddleware([kb], top_k=2, rerank_candidate_k=5).retrieve([QUERY])
    assert sources(hits) == await vector_order(kb, 2)


async def test_static_mode_reranks_with_the_reply_input(kb: KnowledgeBase):
    candidates = await vector_order(kb, 2)
    reranker = ScriptedChatModel(['{"ids": ["c2", "c1"]}'])
    middleware = RAGMiddleware([kb], rerank_model=reranker, mode="static", top_k=1)
    model = ScriptedChatModel(["ok"])

    await Agent("hr-bot", "", model, middlewares=[middleware]).reply(Msg("alice", QUERY, "user"))

    assert (
        f"<user-query>\nalice: {QUERY}\n</user-query>"
        in reranker.calls[0].messages[0].content[0].text
    )
    [hint] = [b for m in model.calls[0].messages for b in m.content if isinstance(b, HintBlock)]
    assert f"[1] (source: {candidates[1]})" in str(hint.hint)


class CaptionEmbedding(HashingEmbeddingModel):
    """A multimodal stand-in: an image is embedded by its name, as if captioned."""

    supports_multimodal = True

    async def embed_batch(self, batch: list[str | DataBlock]) -> list[list[float]]:
        return [self.embed_text(i if isinstance(i, str) else i.name or "") for i in batch]


@pytest.mark.parametrize("vision", [False, True])
async def test_candidates_the_reranker_cannot_read_go_last(make_kb: MakeKB, vision: bool):
    kb = await make_kb("hr", DOCUMENTS, embedding_model=CaptionEmbedding(dimensions=64))
    chart = DataBlock.from_bytes(b"\x89PNG...", "image/png", name="paid days off and leave chart")
    await kb.insert_document(
        [Chunk(content=chart, source="chart.png", chunk_index=0, total_chunks=1)], "chart.png"
    )
    candidates = await vector_order(kb, 3)
    assert candidates[0] == "chart.png"  # the image is the best vector match
    # The model prefers c3, the last text candidate.
    reranker = ScriptedChatModel(['{"ids": ["c3"]}'], vision=vision)
    middleware = RAGMiddleware([kb], rerank_model=reranker, top_k=3, rerank_candidate_k=3)

    hits = await middleware.retrieve([QUERY])

    request = reranker.calls[0].messages[0]
    images = [b for b in request.content if isinstance(b, DataBlock)]
    if vision:
        assert sources(hits) == [candidates[2], candidates[0], candidates[1]]
        assert images == [chart]
    else:
        assert sources(hits) == [candidates[2], candidates[1], "chart.png"]
        assert images == []
        assert 'id="c1"' not in json.dumps(request.model_dump())
