"""A scripted AgentScope chat model: answers as told, keeps what it was sent."""

from __future__ import annotations

import copy
from typing import Any

from agentscope.credential import CredentialBase
from agentscope.formatter import OpenAIChatFormatter
from agentscope.message import Msg
from agentscope.model import ChatModelBase, ChatResponse, StructuredResponse
from pydantic import BaseModel


class _ScriptCredential(CredentialBase):
    @classmethod
    def get_chat_model_class(cls) -> type[ChatModelBase]:
        return ScriptedModel


class ScriptedModel(ChatModelBase):
    """Answers with the given responses in turn and keeps every message list it was sent.

    ``structured`` are the answers, in turn, of ``generate_structured_output``.
    """

    class Parameters(BaseModel):
        pass

    def __init__(
        self, responses: list[ChatResponse], structured: list[dict[str, Any]] | None = None
    ) -> None:
        super().__init__(
            credential=_ScriptCredential(),
            model="scripted",
            parameters=ScriptedModel.Parameters(),
            stream=False,
            max_retries=0,
        )
        self.formatter = OpenAIChatFormatter()
        self.responses = list(responses)
        self.structured = list(structured or [])
        self.calls: list[list[Msg]] = []

    async def _call_api(self, model_name: str, messages: list[Msg], **kwargs: Any) -> ChatResponse:
        self.calls.append(copy.deepcopy(messages))
        return self.responses.pop(0)

    async def _call_api_with_structured_output(
        self, model_name: str, messages: list[Msg], structured_model: Any, **kwargs: Any
    ) -> StructuredResponse:
        self.calls.append(copy.deepcopy(messages))
        return StructuredResponse(content=self.structured.pop(0))
