"""What Ollama's embedding and chat models share: where the server is, and how a credential says so."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel

from .credential import OllamaCredential, OpenAICredential

OLLAMA_URL = "http://localhost:11434/v1"

P = TypeVar("P", bound=BaseModel)


def from_credential(
    credential: OllamaCredential | None, parameters: P | None, options: dict[str, Any]
) -> tuple[P | None, OpenAICredential | None]:
    """The parameters (or ``options``) with the credential's ``host`` as ``base_url``, and its key.

    As in AgentScope, an ``OllamaCredential`` says where the server is; it
    then replaces ``base_url``. Without one, nothing changes.
    """
    if credential is None:
        return parameters, None
    base_url = f"{credential.host.rstrip('/')}/v1"
    if parameters is not None:
        parameters = parameters.model_copy(update={"base_url": base_url})
    else:
        options["base_url"] = base_url
    return parameters, OpenAICredential(api_key=credential.api_key)
