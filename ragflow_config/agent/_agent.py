"""The smallest agent that hosts middlewares: a reasoning-acting loop over a chat model."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

from ..event import AgentEvent
from ..message import Msg, ToolCallState
from ..middleware import HookStream, MiddlewareBase, ReplyState
from ..model import ChatModelBase
from ..tool import Toolkit

EventHandler = Callable[[AgentEvent], None]

# The reply each agent is running in the current task: concurrent replies,
# even of one agent, each see their own state.
_REPLIES: ContextVar[Mapping[Agent, ReplyState]] = ContextVar(
    "ragflow_config_replies", default=MappingProxyType({})
)


class Agent:
    """Calls the model, runs the tools it asks for, feeds the results back, until it answers.

    ``context`` holds the conversation (inputs, answers, tool results) across
    replies. A reply makes at most ``max_iters`` reasoning-acting rounds; if
    the model still wants tools after that, one last call offers none, so it
    answers with what it has. Middlewares wrap every reply (``on_reply``) and
    every reasoning step (``on_reasoning``); their tools are not added
    automatically: put ``await middleware.list_tools()`` in the toolkit.
    """

    def __init__(
        self,
        name: str,
        system_prompt: str,
        model: ChatModelBase,
        toolkit: Toolkit | None = None,
        middlewares: Sequence[MiddlewareBase] = (),
        *,
        max_iters: int = 10,
    ) -> None:
        if max_iters < 1:
            raise ValueError(f"max_iters must be at least 1, got {max_iters}")
        self.name = name
        self.system_prompt = system_prompt
        self.model = model
        self.toolkit = toolkit or Toolkit()
        self.middlewares = tuple(middlewares)
        self.max_iters = max_iters
        self.context: list[Msg] = []

    @property
    def state(self) -> ReplyState:
        """The state of this agent's reply running in the current task."""
        state = _REPLIES.get().get(self)
        if state is None:
            raise RuntimeError(f"agent {self.name!r} has no reply in progress")
        return state

    async def reply(
        self, inputs: Msg | list[Msg] | None = None, *, on_event: EventHandler | None = None
    ) -> Msg:
        """Answer ``inputs``; ``on_event`` receives the events the middlewares yield (hints...)."""
        state = ReplyState(reply_id=uuid.uuid4().hex, context=self.context)
        token = _REPLIES.set({**_REPLIES.get(), self: state})
        try:
            answer: Msg | None = None
            async for item in self._through("on_reply", {"inputs": inputs}, self._reply_impl):
                if isinstance(item, Msg):
                    answer = item
                elif on_event is not None:
                    on_event(item)
        finally:
            _REPLIES.reset(token)
        if answer is None:
            raise RuntimeError(f"a middleware of agent {self.name!r} swallowed the reply's answer")
        return answer

    async def _reply_impl(self, inputs: Msg | list[Msg] | None) -> HookStream:
        self.context.extend(_as_messages(inputs))
        tools = self.toolkit.schemas()
        # max_iters rounds with tools, then one without, so the model answers with what it has.
        for round_ in range(self.max_iters + 1):
            offered = tools if round_ < self.max_iters else []
            answer: Msg | None = None
            async for item in self._through(
                "on_reasoning", {"tools": offered}, self._reasoning_impl
            ):
                if isinstance(item, Msg):
                    answer = item
                else:
                    yield item
            if answer is None:
                raise RuntimeError(
                    f"a middleware of agent {self.name!r} swallowed a reasoning step's answer"
                )
            # A middleware that took its blocks back (a one-shot hint) may leave this
            # reply's own message empty: no turn for the model, no part of the conversation.
            reply_id = self.state.reply_id
            self.context[:] = [m for m in self.context if m.content or m.id != reply_id]
            if not answer.tool_calls or round_ == self.max_iters:
                yield answer
                return
            results = []
            for call in answer.tool_calls:
                results.append(await self.toolkit.call(call))
                call.state = ToolCallState.FINISHED
            self.context.append(Msg(self.name, results, "assistant"))
            self.state.cur_iter += 1

    async def _reasoning_impl(self, tools: list[dict[str, Any]]) -> HookStream:
        system = [Msg("system", self.system_prompt, "system")] if self.system_prompt else []
        response = await self.model([*system, *self.context], tools=tools or None)
        answer = Msg(self.name, response.content, "assistant")
        self.context.append(answer)
        yield answer

    def _through(
        self, hook: str, kwargs: dict[str, Any], core: Callable[..., HookStream]
    ) -> HookStream:
        """``core``'s stream inside every middleware's ``hook``, the first middleware outermost."""

        def layer(index: int, current: dict[str, Any]) -> HookStream:
            if index == len(self.middlewares):
                return core(**current)

            def next_handler(**overrides: Any) -> HookStream:
                return layer(index + 1, {**current, **overrides})

            middleware_hook = getattr(self.middlewares[index], hook)
            stream: HookStream = middleware_hook(self, dict(current), next_handler)
            return stream

        return layer(0, kwargs)


def _as_messages(inputs: Msg | list[Msg] | None) -> list[Msg]:
    if inputs is None:
        return []
    if isinstance(inputs, Msg):
        return [inputs]
    if isinstance(inputs, list) and all(isinstance(item, Msg) for item in inputs):
        return list(inputs)
    raise TypeError(f"an agent replies to a Msg or a list of Msg, not {type(inputs).__name__}")
