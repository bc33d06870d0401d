"""The middleware contract: onion-style hooks around an agent's reply and reasoning steps."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any, Protocol

from .._component import Component
from .._foreign import refuse_agentscope_callers
from ._state import ReplyState

if TYPE_CHECKING:
    from ..tool import ToolBase

# What a hook yields and ``next_handler(**input_kwargs)`` returns, as in AgentScope 2.x:
# an async generator of events, the step's message (``Msg``) among them.
HookStream = AsyncGenerator[Any, None]
NextHandler = Callable[..., HookStream]


class HookedAgent(Protocol):
    """What a hook may use of the agent it wraps: ``ragflow_config.agent.Agent`` is one.

    The contract names no agent class, so the agent that runs middlewares
    stands above them and a middleware never imports its host.
    """

    @property
    def name(self) -> str:
        """The agent's name, the speaker of what it adds to the conversation."""
        ...

    @property
    def state(self) -> ReplyState:
        """The reply in progress."""
        ...


class MiddlewareBase(Component):
    """Wraps an agent's work. Every hook defaults to passing straight through.

    A hook is an async generator (AgentScope 2.x's protocol): it receives the
    agent, the keyword arguments of the step and ``next_handler``, and
    re-yields what ``next_handler(**input_kwargs)`` yields (the inner layers'
    events and the step's ``Msg``), adding, changing or dropping items as it
    likes. The first middleware in the agent's list is the outermost layer.
    Per-reply data belongs in ``agent.state`` or under ``agent.state.reply_id``,
    never in a plain attribute: one middleware may serve several agents and
    replies at once.
    """

    async def on_reply(
        self, agent: HookedAgent, input_kwargs: dict[str, Any], next_handler: NextHandler
    ) -> HookStream:
        """Around one whole reply; ``input_kwargs`` is ``{"inputs": ...}``."""
        async for item in next_handler(**input_kwargs):
            yield item

    async def on_reasoning(
        self, agent: HookedAgent, input_kwargs: dict[str, Any], next_handler: NextHandler
    ) -> HookStream:
        """Around one model call; ``input_kwargs`` is ``{"tools": [...]}``, the tools offered."""
        async for item in next_handler(**input_kwargs):
            yield item

    async def list_tools(self) -> list[ToolBase]:
        """Tools this middleware offers; register them in the agent's ``Toolkit``."""
        return []

    @refuse_agentscope_callers  # AgentScope's Agent asks it first: ours cannot run there
    def is_implemented(self, hook_name: str) -> bool:
        """Whether this middleware's class overrides the hook ``hook_name`` (AgentScope's test)."""
        own = getattr(type(self), hook_name, None)
        return own is not None and own is not getattr(MiddlewareBase, hook_name, None)

    def get_middleware_key(self) -> str:
        """The name that tells middlewares apart: the class's name, as in AgentScope."""
        return type(self).__name__
