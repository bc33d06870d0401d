"""Structured output (what rerank uses) and the scripted model, with no server involved."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from ragflow_config._errors import ChatModelError
from ragflow_config.message import Msg, TextBlock
from ragflow_config.model import ChatResponse, ScriptedChatModel


class Verdict(BaseModel):
    ids: list[str]


@pytest.mark.parametrize(
    "answer",
    [
        '{"ids": ["c1"]}',
        '```json\n{"ids": ["c1"]}\n```',
        'Sure. The answer is {"ids": ["c1"]}, as requested.',
        'First {"note": {"x": 1}} then {"ids": ["c1"]} at last',
        '```\n{"ids": ["c1"]}\n```\nand {"ids": 3}',
    ],
)
async def test_the_first_matching_json_object_is_used(answer: str):
    model = ScriptedChatModel([answer])
    verdict = await model.generate_structured_output([Msg("u", "rank", "user")], Verdict)
    assert verdict == Verdict(ids=["c1"])


@pytest.mark.parametrize("answer", ["", "c1 is best", '{"ids": "c1"', '["c1"]', '{"ranking": []}'])
async def test_no_matching_object_is_a_chat_model_error_quoting_the_answer(answer: str):
    model = ScriptedChatModel([answer])
    with pytest.raises(ChatModelError, match="scripted: the answer holds no JSON object matching"):
        await model.generate_structured_output([Msg("u", "rank", "user")], Verdict)


async def test_the_schema_instruction_joins_the_last_user_turn():
    model = ScriptedChatModel(['{"ids": []}', '{"ids": []}'])
    question = Msg("u", "rank these", "user")

    await model.generate_structured_output([question], Verdict)
    await model.generate_structured_output([question, Msg("bot", "ok", "assistant")], Verdict)

    [turn] = model.calls[0].messages
    assert turn.content[0].text == "rank these"
    assert isinstance(turn.content[1], TextBlock)
    assert turn.content[1].text.startswith("Answer with one JSON object, and nothing else")
    assert '"ids"' in turn.content[1].text
    assert question.content == [question.content[0]]  # the caller's message is untouched
    assert [m.role for m in model.calls[1].messages] == ["user", "assistant", "user"]


async def test_the_scripted_model_replays_records_and_raises():
    failure = ChatModelError("down")
    model = ScriptedChatModel(["one", ChatResponse(content=[TextBlock(text="two")]), failure])
    conversation = [Msg("u", "hi", "user")]

    assert (await model(conversation, tools=[{"type": "function"}])).text == "one"
    conversation.append(Msg("u", "again", "user"))  # later changes do not alter the record
    assert (await model(conversation)).text == "two"
    with pytest.raises(ChatModelError, match="down"):
        await model(conversation)
    with pytest.raises(ChatModelError, match="call 4 but only 3 responses were scripted"):
        await model(conversation)

    assert [len(call.messages) for call in model.calls] == [1, 2, 2, 2]
    assert model.calls[0].tools == [{"type": "function"}]
    assert model.calls[1].tools is None
