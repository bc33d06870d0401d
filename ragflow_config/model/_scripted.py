"""A chat model that replays a script: for tests, demos and offline pipeline runs."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .._errors import ChatModelError
from ..message import Msg, TextBlock
from ._base import ChatModelBase, ChatModelParameters, ChatResponse


@dataclass
class ScriptedCall:
    """One request the model received, copied so later changes to the agent cannot alter it."""

    messages: list[Msg]
    tools: list[dict[str, Any]] | None


class ScriptedChatModel(ChatModelBase):
    """Answers each call with the next scripted response and records the request in ``calls``.

    A response is a string (a text answer), a :class:`ChatResponse` (text and
    tool calls), or an exception instance, which the call raises. Running
    past the end of the script raises :class:`ChatModelError`.
    """

    def __init__(
        self,
        responses: Iterable[str | ChatResponse | Exception],
        parameters: ChatModelParameters | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        self._script = list(responses)
        self.calls: list[ScriptedCall] = []

    @property
    def model_name(self) -> str:
        return "scripted"

    async def __call__(
        self, messages: list[Msg], tools: list[dict[str, Any]] | None = None
    ) -> ChatResponse:
        self.calls.append(
            ScriptedCall(
                messages=[message.model_copy(deep=True) for message in messages],
                tools=copy.deepcopy(tools),
            )
        )
        if len(self.calls) > len(self._script):
            raise ChatModelError(
                f"scripted model: call {len(self.calls)} but only {len(self._script)} "
                "responses were scripted"
            )
        response = self._script[len(self.calls) - 1]
        if isinstance(response, Exception):
            raise response
        if isinstance(response, str):
            return ChatResponse(content=[TextBlock(text=response)])
        return response
