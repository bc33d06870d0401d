"""The tools an agent offers its model, and running the calls the model makes."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from typing import Any

import jsonschema

from ..message import TextBlock, ToolCallBlock, ToolResultBlock, ToolResultState
from ._base import ToolBase

logger = logging.getLogger("ragflow_config.tool")


class Toolkit:
    """Tools by name. Every failure of a call comes back as an error result the model can read."""

    def __init__(self, tools: Iterable[ToolBase] | None = None) -> None:
        self._tools: dict[str, ToolBase] = {}
        for tool in tools or ():
            self.register(tool)

    def register(self, tool: ToolBase) -> None:
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        jsonschema.Draft202012Validator.check_schema(tool.input_schema)
        self._tools[tool.name] = tool

    @property
    def tools(self) -> list[ToolBase]:
        return list(self._tools.values())

    def schemas(self) -> list[dict[str, Any]]:
        return [tool.schema() for tool in self._tools.values()]

    async def call(self, request: ToolCallBlock) -> ToolResultBlock:
        """Parse and validate the arguments, run the tool, and wrap its output."""
        tool = self._tools.get(request.name)
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return _error(request, f"Unknown tool {request.name!r} (available: {known}).")
        try:
            arguments = json.loads(request.input or "{}")
        except json.JSONDecodeError as exc:
            return _error(request, f"Arguments for tool {tool.name} are not valid JSON: {exc}.")
        problem = jsonschema.exceptions.best_match(
            jsonschema.Draft202012Validator(tool.input_schema).iter_errors(arguments)
        )
        if problem is not None:
            where = "/".join(str(part) for part in problem.absolute_path)
            at = f" at {where}" if where else ""
            return _error(
                request, f"Input validation failed for tool {tool.name}{at}: {problem.message}"
            )
        try:
            output = await tool.call(**arguments)
        except Exception as exc:
            logger.exception("tool %s failed", tool.name)
            return _error(request, f"Tool {tool.name} failed: {exc}")
        return ToolResultBlock(
            id=request.id, name=request.name, output=output, state=ToolResultState.SUCCESS
        )


def _error(request: ToolCallBlock, message: str) -> ToolResultBlock:
    return ToolResultBlock(
        id=request.id,
        name=request.name,
        output=[TextBlock(text=message)],
        state=ToolResultState.ERROR,
    )
