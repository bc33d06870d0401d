"""Chat models served by Ollama, through Ollama's own client (``POST /api/chat``)."""

from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field

from .._errors import ChatModelError
from .._http import EndpointOwner
from .._ollama import REQUIRES, OllamaEndpoint, OllamaParameters, from_credential
from ..credential import OllamaCredential
from ..message import Msg, TextBlock, ToolCallBlock
from ._base import ChatModelBase, ChatModelParameters, ChatResponse
from ._openai_format import to_wire_messages

if TYPE_CHECKING:
    import ollama


class OllamaChatModel(EndpointOwner, ChatModelBase):
    """A chat model served by Ollama, e.g. ``OllamaChatModel(model="qwen3")``.

    As in AgentScope, an :class:`~ragflow_config.credential.OllamaCredential`
    says where the server is: its ``host`` replaces ``base_url``. Requests go
    through the ``ollama`` package, as AgentScope's do. No key is sent unless
    the credential, or ``OLLAMA_API_KEY``, holds one (a server behind an
    authenticating proxy).
    """

    class Parameters(ChatModelParameters, OllamaParameters):
        temperature: float | None = Field(
            default=None, ge=0, le=2, description="Sampling temperature; unset uses the server's."
        )
        max_tokens: int | None = Field(
            default=None, gt=0, description="Longest answer in tokens (Ollama's num_predict)."
        )
        # Off, as in AgentScope: a thinking model (qwen3, deepseek-r1) would otherwise
        # reason at length before a rerank's one line of JSON.
        thinking_enable: bool = Field(
            default=False, description="Let a thinking model think before answering."
        )
        timeout: float = Field(default=120.0, gt=0, description="Seconds per request.")

    parameters: Parameters
    requires: ClassVar[dict[str, str]] = REQUIRES

    _endpoint: OllamaEndpoint

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: OllamaCredential | None = None,
        **options: Any,
    ) -> None:
        parameters = from_credential(credential, parameters, options)
        super().__init__(parameters, **options)
        self._endpoint = OllamaEndpoint(self.parameters, credential, "Ollama chat")

    @property
    def model_name(self) -> str:
        return self.parameters.model

    @property
    def host(self) -> str:
        """The Ollama server, as AgentScope's model names it."""
        return self.parameters.host

    @property
    def service(self) -> str:
        """How errors and logs name the remote: never with credentials in the URL."""
        return self._endpoint.service

    async def __call__(
        self, messages: list[Msg], tools: list[dict[str, Any]] | None = None
    ) -> ChatResponse:
        p = self.parameters
        turns = _ollama_turns(to_wire_messages(messages, self.can_read))
        options = {
            name: value
            for name, value in (("temperature", p.temperature), ("num_predict", p.max_tokens))
            if value is not None
        }
        response = await self._endpoint.call(
            lambda client: client.chat(
                model=p.model,
                messages=turns,
                tools=tools or None,
                options=options or None,
                think=p.thinking_enable,
            ),
            error=ChatModelError,
        )
        return ChatResponse(content=_blocks(response.message))


def _ollama_turns(wire: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """chat/completions turns as Ollama's ``/api/chat`` takes them: text content with
    images beside it as base64, tool calls' arguments as objects, and tool results
    named by their tool (Ollama has no call ids). Ollama takes images inline only:
    one given by URL is not sent."""
    tool_names: dict[str, str] = {}
    turns: list[dict[str, Any]] = []
    for turn in wire:
        out: dict[str, Any] = {"role": turn["role"]}
        content = turn.get("content")
        if isinstance(content, list):
            out["content"] = "\n".join(part["text"] for part in content if part["type"] == "text")
            out["images"] = [
                part["image_url"]["url"].partition(";base64,")[2]
                for part in content
                if part["type"] == "image_url" and part["image_url"]["url"].startswith("data:")
            ]
        else:
            out["content"] = content or ""
        if turn.get("tool_calls"):
            out["tool_calls"] = []
            for call in turn["tool_calls"]:
                function = call["function"]
                tool_names[call["id"]] = function["name"]
                arguments = json.loads(function["arguments"] or "{}")
                out["tool_calls"].append(
                    {"function": {"name": function["name"], "arguments": arguments}}
                )
        if turn["role"] == "tool":
            out["tool_name"] = tool_names.get(turn["tool_call_id"], "")
        turns.append(out)
    return turns


def _blocks(message: ollama.Message) -> list[TextBlock | ToolCallBlock]:
    blocks: list[TextBlock | ToolCallBlock] = []
    if message.content:
        blocks.append(TextBlock(text=message.content))
    for call in message.tool_calls or []:
        blocks.append(
            ToolCallBlock(
                id=f"call_{uuid.uuid4().hex}",
                name=call.function.name,
                input=json.dumps(dict(call.function.arguments), ensure_ascii=False),
            )
        )
    return blocks
