"""Chat models behind any server that speaks OpenAI's ``POST /chat/completions``.

That covers OpenAI itself, DashScope's compatible mode, vLLM and Ollama's ``/v1``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import Field, ValidationError

from .._errors import ChatModelError
from .._http import ApiKeyCredential, EndpointOwner, EndpointParameters, unexpected_response
from .._openai import REQUIRES, OpenAIEndpoint
from ..credential import OpenAICredential
from ..message import Msg
from ._base import ChatModelBase, ChatModelParameters, ChatResponse
from ._openai_format import WireResponse, to_wire_messages

_ApiKeyCredential = ApiKeyCredential


class OpenAICompatibleChatModel(EndpointOwner, ChatModelBase):
    """A chat model at an OpenAI-compatible ``{base_url}/chat/completions`` endpoint.

    Tools are sent as ``tools`` and come back as ``tool_calls`` with JSON
    ``arguments``. The API key is ``credential``, or else read from the
    variable ``api_key_env`` when the model is built; it is optional because
    local servers need none. Requests go through the ``openai`` SDK, as
    AgentScope's do. One client per instance, opened on first use; close it
    with :meth:`aclose` or ``async with model:``.
    """

    class Parameters(ChatModelParameters, EndpointParameters):
        temperature: float | None = Field(
            default=None, ge=0, le=2, description="Sampling temperature; unset uses the server's."
        )
        timeout: float = Field(default=120.0, gt=0, description="Seconds per request.")

    parameters: Parameters
    requires: ClassVar[dict[str, str]] = REQUIRES
    credential_type: ClassVar[type[_ApiKeyCredential]] = OpenAICredential
    service_label: ClassVar[str] = "OpenAI-compatible chat"

    _endpoint: OpenAIEndpoint

    def __init__(
        self,
        parameters: Parameters | None = None,
        *,
        credential: _ApiKeyCredential | None = None,
        **options: Any,
    ) -> None:
        super().__init__(parameters, **options)
        self._endpoint = OpenAIEndpoint.for_model(
            self.parameters, credential, self.credential_type, self.service_label
        )

    @property
    def model_name(self) -> str:
        return self.parameters.model

    @property
    def service(self) -> str:
        """How errors and logs name the remote: never with credentials in the URL."""
        return self._endpoint.service

    async def __call__(
        self, messages: list[Msg], tools: list[dict[str, Any]] | None = None
    ) -> ChatResponse:
        p = self.parameters
        payload: dict[str, Any] = {
            "model": p.model,
            "messages": to_wire_messages(messages, self.can_read),
        }
        if tools:
            payload["tools"] = tools
        if p.temperature is not None:
            payload["temperature"] = p.temperature
        response = await self._endpoint.call(
            lambda client, headers: client.chat.completions.create(
                **payload, extra_headers=headers
            ),
            error=ChatModelError,
            max_retries=p.max_retries,
            retry_delay=p.retry_delay,
        )
        # Read back as the fields the server sent (exclude_unset), then as our wire shape:
        # compatible servers differ from OpenAI's types (arguments as an object, no ids).
        body = response.to_dict(warnings=False)
        try:
            return ChatResponse(content=WireResponse.model_validate(body).blocks())
        except ValidationError as exc:
            raise ChatModelError(unexpected_response(self.service, exc)) from None


#: AgentScope's name for the OpenAI chat model; the registered type stays ``openai_compatible``.
OpenAIChatModel = OpenAICompatibleChatModel
