"""``EmbeddingModelCard``: what a provider's embedding model takes and returns, as AgentScope lists it."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


def _no_parameters() -> dict[str, Any]:
    return {"type": "object", "properties": {}, "required": []}


class EmbeddingModelCard(BaseModel):
    """One model a class can call: AgentScope 2.0.11's card, field for field.

    ``parameter_schema`` is the JSON Schema of the per-model knobs a frontend
    may offer beyond ``dimensions``; no model here has any, as in AgentScope.
    """

    type: Literal["embedding_model"] = "embedding_model"
    name: str = Field(description="The model name used in API calls.")
    label: str = Field(description="Human-readable label for the frontend.")
    status: Literal["active", "deprecated", "sunset"] = "active"
    input_types: list[str] = Field(default_factory=lambda: ["text/plain"])
    output_types: list[str] = Field(default_factory=lambda: ["application/x-embedding"])
    dimensions: int = Field(gt=0, description="Default output vector dimensions.")
    supported_dimensions: list[int] | None = Field(
        default=None,
        description="The only dimensions the model can produce; None: fixed at `dimensions`.",
    )
    context_size: int | None = Field(default=None, gt=0, description="Most tokens per input.")
    parameter_schema: dict[str, Any] = Field(default_factory=_no_parameters)
    parameter_overrides: dict[str, dict[str, Any]] = Field(default_factory=dict)
