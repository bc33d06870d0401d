"""The agent host: the reasoning-acting loop, the onion of middlewares, per-reply state."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from ragflow_config.agent import Agent
from ragflow_config.event import ReplyStartEvent
from ragflow_config.message import (
    DataBlock,
    Msg,
    TextBlock,
    ToolCallBlock,
    ToolCallState,
    ToolResultBlock,
    ToolResultState,
)
from ragflow_config.middleware import HookStream, MiddlewareBase, NextHandler
from ragflow_config.model import ChatResponse, ScriptedChatModel
from ragflow_config.tool import ToolBase, Toolkit


class AddTool(ToolBase):
    name = "add"
    description = "Add two integers."
    input_schema: dict[str, Any] = {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    }

    async def call(self, **arguments: Any) -> list[TextBlock | DataBlock]:
        if arguments["b"] == 0:
            raise ArithmeticError("b must not be zero in this test")
        return [TextBlock(text=str(arguments["a"] + arguments["b"]))]


def calls(*requests: tuple[str, str]) -> ChatResponse:
    return ChatResponse(
        content=[
            ToolCallBlock(id=f"call_{number}", name=name, input=arguments)
            for number, (name, arguments) in enumerate(requests)
        ]
    )


class Recorder(MiddlewareBase):
    """Logs when it is entered and left, and what the agent's state said."""

    def __init__(self, label: str, log: list[Any]) -> None:
        super().__init__()
        self.label = label
        self.log = log

    async def on_reply(
        self, agent: Agent, input_kwargs: dict[str, Any], next_handler: NextHandler
    ) -> HookStream:
        self.log.append(f"{self.label}: reply in")
        async for item in next_handler(**input_kwargs):
            yield item
        self.log.append(f"{self.label}: reply out")

    async def on_reasoning(
        self, agent: Agent, input_kwargs: dict[str, Any], next_handler: NextHandler
    ) -> HookStream:
        self.log.append(f"{self.label}: step {agent.state.cur_iter}")
        async for item in next_handler(**input_kwargs):
            yield item


async def test_tool_results_are_fed_back_until_the_model_answers():
    model = ScriptedChatModel([calls(("add", '{"a": 2, "b": 3}')), "2 + 3 = 5"])
    agent = Agent("calc", "You add.", model, Toolkit([AddTool()]))

    answer = await agent.reply(Msg("alice", "2+3?", "user"))

    assert (answer.role, answer.name, answer.text) == ("assistant", "calc", "2 + 3 = 5")
    assert model.calls[0].tools == [AddTool().schema()]
    assert [m.role for m in model.calls[0].messages] == ["system", "user"]
    request, results = model.calls[1].messages[2:]
    assert request.tool_calls[0].input == '{"a": 2, "b": 3}'
    assert request.tool_calls[0].state == ToolCallState.FINISHED
    [result] = results.content
    assert isinstance(result, ToolResultBlock)
    assert (result.id, result.name, result.state) == ("call_0", "add", ToolResultState.SUCCESS)
    assert [block.text for block in result.output if isinstance(block, TextBlock)] == ["5"]
    assert agent.context[-1] is answer


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (("multiply", "{}"), "Unknown tool 'multiply' (available: add)."),
        (("add", "{a: 1}"), "Arguments for tool add are not valid JSON"),
        (("add", '{"a": 1}'), "Input validation failed for tool add: 'b' is a required property"),
        (("add", '{"a": 1, "b": 0}'), "Tool add failed: b must not be zero in this test"),
    ],
)
async def test_a_bad_tool_call_is_an_error_result_not_a_crash(
    request_: tuple[str, str], message: str
):
    model = ScriptedChatModel([calls(request_), "Sorry."])
    agent = Agent("calc", "", model, Toolkit([AddTool()]))

    assert (await agent.reply(Msg("alice", "?", "user"))).text == "Sorry."

    [result] = model.calls[1].messages[-1].content
    assert isinstance(result, ToolResultBlock)
    assert result.state == ToolResultState.ERROR
    assert result.output[0].text.startswith(message)


async def test_max_iters_bounds_the_loop_with_a_last_tool_free_step():
    model = ScriptedChatModel([calls(("add", '{"a": 1, "b": 1}'))] * 2 + ["Giving up: 2."])
    agent = Agent("calc", "", model, Toolkit([AddTool()]), max_iters=2)

    answer = await agent.reply(Msg("alice", "loop", "user"))

    assert answer.text == "Giving up: 2."
    assert [call.tools is None for call in model.calls] == [False, False, True]


async def test_middlewares_nest_first_outermost_and_cur_iter_restarts_each_reply():
    log: list[Any] = []
    model = ScriptedChatModel([calls(("add", '{"a": 1, "b": 1}')), "2", "again"])
    agent = Agent(
        "calc", "", model, Toolkit([AddTool()]), [Recorder("outer", log), Recorder("inner", log)]
    )

    await agent.reply(Msg("alice", "1+1", "user"))
    await agent.reply(Msg("alice", "again", "user"))

    assert log == [
        "outer: reply in",
        "inner: reply in",
        "outer: step 0",
        "inner: step 0",
        "outer: step 1",
        "inner: step 1",
        "inner: reply out",
        "outer: reply out",
        "outer: reply in",
        "inner: reply in",
        "outer: step 0",
        "inner: step 0",
        "inner: reply out",
        "outer: reply out",
    ]


async def test_a_middleware_can_override_the_step_arguments():
    class NoTools(MiddlewareBase):
        async def on_reasoning(
            self, agent: Agent, input_kwargs: dict[str, Any], next_handler: NextHandler
        ) -> HookStream:
            assert input_kwargs == {"tools": [AddTool().schema()]}
            async for item in next_handler(tools=[]):
                yield item

    model = ScriptedChatModel(["no tools for you"])
    await Agent("calc", "", model, Toolkit([AddTool()]), [NoTools()]).reply(Msg("a", "?", "user"))

    assert model.calls[0].tools is None


async def test_middleware_streams_carry_events_out_and_may_replace_the_answer():
    class Announce(MiddlewareBase):
        """Adds an event before the step and rewrites the step's answer, as a generator may."""

        async def on_reasoning(
            self, agent: Agent, input_kwargs: dict[str, Any], next_handler: NextHandler
        ) -> HookStream:
            yield ReplyStartEvent(session_id="s", reply_id=agent.state.reply_id, name=agent.name)
            async for item in next_handler(**input_kwargs):
                yield (
                    Msg(item.name, item.text.upper(), "assistant")
                    if isinstance(item, Msg)
                    else item
                )

    class Swallow(MiddlewareBase):
        async def on_reply(
            self, agent: Agent, input_kwargs: dict[str, Any], next_handler: NextHandler
        ) -> HookStream:
            async for item in next_handler(**input_kwargs):
                if not isinstance(item, Msg):
                    yield item

    events: list[Any] = []
    agent = Agent("bot", "", ScriptedChatModel(["fine"]), middlewares=[Announce()])
    answer = await agent.reply(Msg("u", "how are you?", "user"), on_event=events.append)

    assert answer.text == "FINE"
    assert [type(event) for event in events] == [ReplyStartEvent]
    with pytest.raises(RuntimeError, match="swallowed the reply's answer"):
        await Agent("bot", "", ScriptedChatModel(["fine"]), middlewares=[Swallow()]).reply()


async def test_state_is_per_reply_even_for_concurrent_replies_of_one_agent():
    seen: dict[str, str] = {}
    release = asyncio.Event()

    class Remember(MiddlewareBase):
        async def on_reasoning(
            self, agent: Agent, input_kwargs: dict[str, Any], next_handler: NextHandler
        ) -> HookStream:
            question = agent.state.context[-1].text
            seen[question] = agent.state.reply_id
            if len(seen) == 2:
                release.set()
            await release.wait()
            assert seen[question] == agent.state.reply_id
            async for item in next_handler(**input_kwargs):
                yield item

    agent = Agent("bot", "", ScriptedChatModel(["a", "b"]), middlewares=[Remember()])
    await asyncio.gather(agent.reply(Msg("u", "one", "user")), agent.reply(Msg("u", "two", "user")))

    assert len(set(seen.values())) == 2
    with pytest.raises(RuntimeError, match="no reply in progress"):
        _ = agent.state


def test_messages_check_their_blocks_against_the_role():
    with pytest.raises(ValueError, match="a user message cannot carry a tool_call block"):
        Msg("alice", [ToolCallBlock(id="1", name="add", input="{}")], "user")
    with pytest.raises(ValueError, match="a system message cannot carry a data block"):
        Msg("system", [DataBlock.from_bytes(b"x", "image/png")], "system")
    assert Msg("alice", "hi", "user").content[0].text == "hi"
    assert json.loads(Msg("a", "hi", "user").model_dump_json())["content"][0]["type"] == "text"
