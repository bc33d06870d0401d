"""The middleware contract: onion-style hooks around an agent's reply and reasoning steps."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from .._component import Component
from ..message import Msg
from ..tool import ToolBase

if TYPE_CHECKING:
    from ..agent import Agent

NextHandler = Callable[..., Awaitable[Msg]]


class MiddlewareBase(Component):
    """Wraps an agent's work. Every hook defaults to passing straight through.

    A hook receives the agent, the keyword arguments of the step and
    ``next_handler``; calling ``next_handler(**overrides)`` runs the inner
    layers (with ``overrides`` merged into the arguments) and returns their
    result. The first middleware in the agent's list is the outermost layer.
    Per-reply data belongs in ``agent.state``, never on the middleware, which
    may serve several agents and replies at once.
    """

    async def on_reply(
        self, agent: Agent, input_kwargs: dict[str, Any], next_handler: NextHandler
    ) -> Msg:
        """Around one whole reply; ``input_kwargs`` is ``{"inputs": ...}``."""
        return await next_handler()

    async def on_reasoning(
        self, agent: Agent, input_kwargs: dict[str, Any], next_handler: NextHandler
    ) -> Msg:
        """Around one model call; ``input_kwargs`` is ``{"tools": [...]}``, the tools offered."""
        return await next_handler()

    async def list_tools(self) -> list[ToolBase]:
        """Tools this middleware offers; register them in the agent's ``Toolkit``."""
        return []
